package fill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/novox/mesh-provisioner/outputs/unixsock"
)

// Serve listens on the unix socket at socketPath (mode 0660) and serves until
// ctx ends, then stops cleanly and removes the socket. A stale socket left at
// socketPath is removed first; a live one, or a file that is not a socket, is
// an error, and so is a Root that is not a directory. With a StateDir it
// first takes the dir for itself until it returns (statelock.go: one
// mesh-fill per state dir; another's is an error naming its pid), reads
// it (a state it cannot trust is an error naming the file and what to do:
// ledgerload.go) and removes the stale temp files beside the paths held
// (temps.go); once listening, it runs the programs an earlier mesh-fill
// stopped before running (pending.go).
func (s *Server) Serve(ctx context.Context, socketPath string) error {
	if err := checkRoot(s.Root); err != nil {
		return fmt.Errorf("fill socket %s: %w", socketPath, err)
	}
	letGoRoot, err := s.holdRoot() // the directory named now, for every request (dirs.go)
	if err != nil {
		return fmt.Errorf("fill socket %s: root: %w", socketPath, err)
	}
	defer letGoRoot() // after every request and the pending programs
	for _, g := range s.Allow {
		if msg := CheckAllow(g, false); msg != "" {
			return fmt.Errorf("fill socket %s: %s", socketPath, msg)
		}
	}
	for _, g := range s.AllowUnits {
		if msg := CheckAllow(g, true); msg != "" {
			return fmt.Errorf("fill socket %s: %s", socketPath, msg)
		}
	}
	if len(s.Allow) == 0 {
		s.Log.Warn().Msg("no --allow: every path may be written (below the root, if one is set)")
	}
	if root := strings.TrimSuffix(s.Root, "/"); root != "" {
		for _, g := range s.Allow {
			if strings.HasPrefix(g, root+"/") {
				// matched against the request's path, which is below the root
				s.Log.Warn().Str("allow", g).Str("root", s.Root).
					Msg("--allow glob begins with --root: globs are matched against the paths requests name, below the root (/etc/* for " + root + "/etc/*), so this one allows only " + root + g)
			}
		}
	}
	if len(s.AllowUnits) == 0 {
		s.Log.Warn().Msg("no --allow-unit: every unit may be restarted or reloaded")
	}
	if len(s.Command) == 0 {
		// found at the first restart otherwise, a 500 after its files were written
		if _, err := exec.LookPath("systemctl"); err != nil {
			s.Log.Warn().Err(err).Msg("systemctl not found: every restart or reload will fail until it is; on a machine without systemd name --on-change-command")
		}
	}
	// The socket's directory is not made here (it is the node-engine's, or
	// systemd's RuntimeDirectory): say so before the state dir is made or
	// locked, rather than a bind's bare ENOENT after it.
	if d := filepath.Dir(socketPath); !isDirPath(d) {
		return fmt.Errorf("fill socket %s: its directory %s is not there: make it, or name another socket with --socket", socketPath, d)
	}
	if err := stateDirApart(s.Root, s.StateDir); err != nil {
		return fmt.Errorf("fill socket %s: %w", socketPath, err)
	}
	if s.StateDir != "" {
		unlock, err := lockStateDir(s.StateDir) // held until Serve returns: the process's life, in mesh-fill
		if err != nil {
			return fmt.Errorf("fill socket %s: %w", socketPath, err)
		}
		s.state.take(unlock)
		defer s.state.letGo()
		if err := s.state.load(s.StateDir, s.Log, s.leadsTo); err != nil {
			return fmt.Errorf("fill socket %s: %w", socketPath, err)
		}
		s.sweepHeld()
		if s.stateAt, err = stateDirAt(s.Root, s.StateDir); err != nil {
			return fmt.Errorf("fill socket %s: state dir %s: %w", socketPath, s.StateDir, err)
		}
	}
	if s.dirLimit == 0 {
		s.dirLimit = dirLimitFor(openFileLimit())
	}
	if err := removeStale(socketPath); err != nil {
		return err
	}
	// Bound 0660 before it is reachable: a connection made while the
	// umask's mode was on it would be served as root after.
	ln, err := unixsock.Listen(socketPath, 0o660)
	if err != nil {
		return fmt.Errorf("fill socket %s: listening: %w", socketPath, err)
	}
	defer os.Remove(socketPath) // closing the listener leaves it (unixsock)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: headerTimeout, MaxHeaderBytes: maxHeaderBytes,
		ReadTimeout: orDefault(s.ReadTimeout, DefaultReadTimeout), IdleTimeout: orDefault(s.IdleTimeout, DefaultIdleTimeout),
		ErrorLog: httpErrorLog(s.Log, socketPath)}
	conns := s.newConnCap() // over the cap: answered 503 at once, never read (conncap.go)
	ln, srv.ConnState = conns.listener(ln), conns.state
	if len(s.AllowUIDs) > 0 {
		srv.Handler, srv.ConnContext = s.peerCheck(srv.Handler), ConnContext
		ln = PeerListener{ln}
	}
	ln = protoErrListener{ln} // net/http's own 400, 431 and 501 said as {"error"} (protoerr.go)

	atStart := s.state.pendingAtStart() // before a request can add to them
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var pending sync.WaitGroup
	defer pending.Wait() // before the state dir is let go
	pending.Go(func() {
		run := func() { s.runPending(ctx, atStart) }
		if s.aroundPending != nil {
			s.aroundPending(run)
			return
		}
		run()
	})
	s.Log.Info().Str("socket", socketPath).Str("root", s.Root).Ints("allow_uids", s.AllowUIDs).
		Strs("allow", s.Allow).Strs("allow_units", s.AllowUnits).Str("state_dir", s.StateDir).
		Int("max_requests", s.maxRequests()).Int("max_conns", s.maxConns()).Int("max_dirs_per_request", s.dirLimit).Msg("fill socket listening")

	select {
	case err := <-errc:
		return fmt.Errorf("fill socket %s: %w", socketPath, err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.Log.Info().Str("socket", socketPath).Msg("fill socket stopped")
	if err != nil {
		return fmt.Errorf("fill socket %s: stopping: %w", socketPath, err)
	}
	return nil
}

// maxHeaderBytes bounds a request's head (net/http's default is 1 MB,
// held while read, on each of MaxConns connections): the client's are a
// few hundred bytes, a DELETE's escaped module name at most 765.
const maxHeaderBytes = 64 << 10

func removeStale(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fill socket %s: %w", p, err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("fill socket %s: a file that is not a socket is there", p)
	}
	if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("fill socket %s: another server answers there", p)
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("fill socket %s: removing the stale socket: %w", p, err)
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// isDirPath says whether p is a directory here.
func isDirPath(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// checkRoot says what is wrong with root, --root, when it is not a
// directory: not there, or a file of another kind (named, so a typo or a
// path swapped for a file is seen as such).
func checkRoot(root string) error {
	if root == "" {
		return nil
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--root %s is not there: make the directory to confine files to, or name another", root)
	case err != nil:
		return fmt.Errorf("--root %s: %w", root, err)
	case fi.Mode().IsRegular():
		return fmt.Errorf("--root %s is a regular file, not a directory: name the directory to confine files to", root)
	case !fi.IsDir():
		return fmt.Errorf("--root %s is %s, not a directory: name the directory to confine files to", root, fileKind(fi.Mode()))
	}
	return nil
}

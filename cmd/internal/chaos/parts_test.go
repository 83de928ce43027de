package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// fillPart is one node's mesh-fill, in the test process: a new fill.Server
// at every start (a restart forgets all but its state dir, as a process
// would), confined to root.
type fillPart struct {
	t                       *testing.T
	node, sock, root, state string
	log                     zerolog.Logger
	slow                    atomic.Int64  // each request waits this long first (ns)
	requests                chan string   // the module of each fill request, when someone listens
	listen                  atomic.Bool   // send to requests
	cancel                  func()        // nil while stopped
	done                    chan struct{} // closed when Serve returned
}

func (f *fillPart) start() {
	f.t.Helper()
	if f.cancel != nil {
		return
	}
	s := &fill.Server{
		Root: f.root, StateDir: f.state, Log: f.log.With().Str("node", f.node).Logger(),
		Command: []string{"true"},
		OnRequest: func(r fill.Request) {
			if d := f.slow.Load(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			if f.listen.Load() {
				select {
				case f.requests <- r.Module:
				default:
				}
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() { defer close(done); err = s.Serve(ctx, f.sock) }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if fi, e := os.Stat(f.sock); e == nil && fi.Mode()&os.ModeSocket != 0 {
			break
		}
		select {
		case <-done:
			cancel()
			f.t.Fatalf("mesh-fill of %s: %v", f.node, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			f.t.Fatalf("mesh-fill of %s: socket %s not there within 10s", f.node, f.sock)
		}
	}
	f.cancel, f.done = cancel, done
}

func (f *fillPart) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		f.t.Errorf("mesh-fill of %s did not stop within 30s", f.node)
	}
	f.cancel = nil
	// A stopped mesh-fill leaves no socket to answer: remove a stale one
	// so the client sees "not answering", as after a crash.
	_ = os.Remove(f.sock)
}

// clientPart is one node's client, a real process of the client binary:
// SIGKILL is real, and its state dir outlives it.
type clientPart struct {
	t    *testing.T
	node string
	args []string
	logs string // stdout and stderr, appended by every run
	cmd  *exec.Cmd
	done chan struct{}
}

func (c *clientPart) start() {
	c.t.Helper()
	if c.cmd != nil {
		return
	}
	out, err := os.OpenFile(c.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		c.t.Fatalf("starting the client of %s: %v", c.node, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(done) }()
	c.cmd, c.done = cmd, done
}

// kill sends sig and waits for the process to end (SIGKILL after 20 s).
func (c *clientPart) kill(sig syscall.Signal) {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.cmd = nil
}

// provServer is the provisioner server in the test process.
type provServer struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startServer(urls string, replicas int, log zerolog.Logger) *provServer {
	ctx, cancel := context.WithCancel(context.Background())
	p := &provServer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_ = srv.Run(ctx, srv.Config{NATSURL: urls, Replicas: replicas, Log: log.With().Str("part", "mesh-provisioner").Logger()})
	}()
	return p
}

func (p *provServer) stop() {
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
	}
}

// newLog is a zerolog logger appending to path (closed when the test ends).
func newLog(t *testing.T, path string) zerolog.Logger {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return zerolog.New(zerolog.SyncWriter(f)) // several parts of the test append to it.With().Timestamp().Logger()
}

// shortDir is a temp dir with a short path (unix socket paths are limited
// to 107 bytes), removed when the test ends.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "chaos")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("CHAOS_KEEP") != "" {
			t.Logf("kept %s (CHAOS_KEEP)", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// clientArgs are the client's command line: all three URLs, retry ticks
// short enough for the run's bound (a refused secret asked again after 2 s
// rather than 10 minutes).
func clientArgs(bin, node, urls, sock, state string) []string {
	return []string{bin, "run", "--node", node, "--nats", urls, "--fill-socket", sock,
		"--state-dir", state, "--control", "", "--refill", "10s", "--refused-retry", "2s"}
}

// nodeDirs makes the directories of node under base.
func nodeDirs(base, node string) (root, fillState, clientState string, err error) {
	root, fillState, clientState = filepath.Join(base, node, "root"), filepath.Join(base, node, "fill"), filepath.Join(base, node, "client")
	for _, d := range []string{root, fillState, clientState} {
		if err = os.MkdirAll(d, 0o755); err != nil {
			return "", "", "", fmt.Errorf("node %s: %w", node, err)
		}
	}
	return root, fillState, clientState, nil
}

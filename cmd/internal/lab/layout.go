package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// maxSocketPath keeps unix socket paths under the kernel's limit (108
// bytes on Linux, 104 on the BSDs) with room to spare.
const maxSocketPath = 100

// layout is where the lab keeps things under its directory:
//
//	<dir>/nats/              the JetStream store
//	<dir>/creds/             each part's .creds file (lab.creds may do everything)
//	<dir>/operator/          the keys of the bus's operator and accounts
//	<dir>/programs.log       the restarts and reloads the fill servers ran
//	<dir>/root/<node>/       what each node's fill server writes, as if it were /
//	<dir>/<node>/state/      each client's state directory (archives by digest)
//	<dir>/<node>/fill-state/ what each node's fill server wrote for which module
//	<dir>/<node>/fill.sock   each node's fill socket
//	<dir>/<node>/control.sock each client's control socket
//
// The sockets move to a short temporary directory ($TMPDIR, else /tmp) when <dir> is too long a
// path for a unix socket.
type layout struct {
	dir      string // absolute
	sockets  string // absolute; dir unless too long
	tempSock bool   // sockets is a temporary directory of its own
	nodes    []string
}

func newLayout(dir string, nodes []string) (*layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lab directory %s: %w", dir, err)
	}
	l := &layout{dir: abs, sockets: abs, nodes: nodes}
	longest := slices.MaxFunc(nodes, func(a, b string) int { return len(a) - len(b) })
	fits := func(dir string) bool { return len(filepath.Join(dir, longest, "control.sock")) < maxSocketPath }
	if !fits(abs) {
		// $TMPDIR, else /tmp when $TMPDIR is a long path too (a CI
		// runner's workspace, a test's temp dir).
		var t string
		for _, base := range []string{os.TempDir(), "/tmp"} {
			if !fits(filepath.Join(base, "mesh-lab-0123456789")) {
				continue
			}
			if t, err = os.MkdirTemp(base, "mesh-lab-"); err == nil {
				break
			}
		}
		if t == "" {
			if err == nil {
				err = fmt.Errorf("$TMPDIR (%s) and /tmp are too long paths too", os.TempDir())
			}
			return nil, fmt.Errorf("a short directory for the lab's sockets (%s is too long a path for them): %w", abs, err)
		}
		l.sockets, l.tempSock = t, true
	}
	return l, nil
}

func (l *layout) store() string            { return filepath.Join(l.dir, "nats") }
func (l *layout) creds() string            { return filepath.Join(l.dir, "creds") }
func (l *layout) keys() string             { return filepath.Join(l.dir, "operator") }
func (l *layout) programs() string         { return filepath.Join(l.dir, "programs.log") }
func (l *layout) rootDir() string          { return filepath.Join(l.dir, "root") }
func (l *layout) root(node string) string  { return filepath.Join(l.dir, "root", node) }
func (l *layout) state(node string) string { return filepath.Join(l.dir, node, "state") }
func (l *layout) fillState(node string) string {
	return filepath.Join(l.dir, node, "fill-state")
}
func (l *layout) fill(node string) string    { return filepath.Join(l.sockets, node, "fill.sock") }
func (l *layout) control(node string) string { return filepath.Join(l.sockets, node, "control.sock") }

// lock takes <dir>/lock for this lab, so that a second lab on the same
// directory is refused before it wipes anything (dirlock: the flock goes
// with the process, however it ends).
func (l *layout) lock() (release func(), err error) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the lab directory %s: %w", l.dir, err)
	}
	release, err = dirlock.Take(l.dir, "mesh-lab", "")
	if inUse := (*dirlock.InUseError)(nil); errors.As(err, &inUse) {
		who := "pid not written yet"
		if inUse.Holder != nil {
			who = fmt.Sprintf("pid %d", inUse.Holder.PID)
		}
		return nil, fmt.Errorf("another lab runs in %s (%s): stop it, or give this one another --dir", l.dir, who)
	}
	if err != nil {
		return nil, fmt.Errorf("the lab directory %s: %w", l.dir, err)
	}
	return release, nil
}

// prepare wipes what an earlier lab left (unless keep) and makes the
// directories. Only the lab's own entries are removed, never <dir> itself:
// a --dir pointing somewhere unexpected loses nothing else.
func (l *layout) prepare(keep bool) error {
	if !keep {
		// server.conf: what a lab before operator mode left.
		old := []string{l.store(), l.programs(), l.rootDir(), l.creds(), l.keys(), filepath.Join(l.dir, "server.conf")}
		for _, n := range l.nodes {
			old = append(old, filepath.Join(l.dir, n))
		}
		for _, p := range old {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("wiping the last lab's %s: %w", p, err)
			}
		}
	}
	dirs := []string{l.store()}
	for _, n := range l.nodes {
		dirs = append(dirs, l.root(n), filepath.Dir(l.fill(n)))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("making the lab directory %s: %w", d, err)
		}
	}
	// Each client's state dir is its owner's alone, as a client makes its
	// --state-dir (0700), also where the sockets sit elsewhere and under
	// --keep of a lab that made it wider.
	for _, n := range l.nodes {
		if err := os.MkdirAll(l.state(n), 0o700); err != nil {
			return fmt.Errorf("making the lab directory %s: %w", l.state(n), err)
		}
		if err := os.Chmod(l.state(n), 0o700); err != nil {
			return fmt.Errorf("lab directory %s: %w", l.state(n), err)
		}
	}
	// The sockets live there: keep each node's directory to its owner.
	for _, n := range l.nodes {
		if err := os.Chmod(filepath.Dir(l.fill(n)), 0o700); err != nil {
			return fmt.Errorf("lab directory of node %s: %w", n, err)
		}
	}
	return nil
}

// cleanup removes the temporary socket directory, if one was made.
func (l *layout) cleanup() {
	if l.tempSock {
		_ = os.RemoveAll(l.sockets)
	}
}

// show is p as a person would type it: relative to the working directory
// (./…) when under it, else absolute.
func show(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	rel, err := filepath.Rel(wd, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return "./" + rel
}

// nodesOf lists the nodes the example mesh assigns modules to.
func nodesOf(m *examples.Mesh) ([]string, error) {
	set := map[string]bool{}
	for key := range m.Assignments {
		toks, err := spec.DecodeKey(key, 2)
		if err != nil {
			return nil, fmt.Errorf("example assignment %s: %w", key, err)
		}
		set[toks[0]] = true
	}
	if len(set) == 0 {
		return nil, errors.New("the example mesh assigns nothing")
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// standIns are the files a real system ships that the example mesh merges
// into (forms managed-block and managed-keys): the lab writes these first,
// so a newcomer sees the provisioner keep every line it does not own.
var standIns = map[string]string{
	"/etc/ssh/sshd_config": "# Stand-in for the distribution's sshd_config, written by mesh-lab.\n" +
		"Include /etc/ssh/sshd_config.d/*.conf\n" +
		"KbdInteractiveAuthentication no\n" +
		"UsePAM yes\n",
	"/etc/ssh/sshd_config.d/60-mesh.conf": "# A local edit made before the provisioner ran (written by mesh-lab).\n" +
		"Port=2200\n" +
		"ClientAliveInterval=120\n",
}

// seedStandIns writes, under each node's root, the stand-in of every file
// one of its plans merges into, unless the file is there already.
func (l *layout) seedStandIns(m *examples.Mesh) error {
	for key, data := range m.Assignments {
		var a nodes.Assignment
		if err := json.Unmarshal(data, &a); err != nil {
			return fmt.Errorf("example assignment %s: %w", key, err)
		}
		for _, f := range a.Provisioning.Files {
			body, ok := standIns[f.Path]
			if !ok || (f.Form != "managed-block" && f.Form != "managed-keys") {
				continue
			}
			p := filepath.Join(l.root(a.Node), filepath.FromSlash(f.Path))
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("stand-in %s of node %s: %w", f.Path, a.Node, err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				return fmt.Errorf("stand-in %s of node %s: %w", f.Path, a.Node, err)
			}
		}
	}
	return nil
}

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A second client on a state dir in use (here ace's, whose daemon runs in
// this process) exits 2 at once, naming the dir and who holds it, as for
// any other start check.
func TestRunExitsTwoWhenTheStateDirIsInUse(t *testing.T) {
	w := newWorld(t)
	w.until("", "status", "--control", w.sock) // ace's daemon answers
	for _, node := range []string{"ace", "bee"} {
		code, _, stderr := runCLIWithin(t, "run", "--node", node, "--nats", "nats://127.0.0.1:1", "--control", "",
			"--state-dir", w.state)
		want := fmt.Sprintf("run: state dir %s is in use by another mesh-provisioner-client (pid %d, node ace)", w.state, os.Getpid())
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("--node %s: exit %d, stderr %q; want 2 and %q", node, code, stderr, want)
		}
	}
}

// A state dir that cannot be used exits 2 at start, naming it and why,
// rather than leaving every module waiting for a cache it cannot write.
func TestRunExitsTwoWhenTheStateDirCannotBeUsed(t *testing.T) {
	dir := unusableDir(t)
	code, _, stderr := runCLIWithin(t, "run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "",
		"--state-dir", dir)
	if code != 2 || !strings.Contains(stderr, "run: state dir "+dir+" cannot be used") || !strings.Contains(stderr, "not a directory") {
		t.Fatalf("exit %d, stderr %q; want 2, the dir and why", code, stderr)
	}
}

// A --control the client cannot serve on exits 2 at once, said as "run: …"
// as the state dir's and the flags' errors are, before the client takes
// the bus: another client answering on it (two clients of one node), a
// file that is no socket, a directory that cannot be made. Before, each
// was a log line "stopped" and exit 1, after the client had connected and
// begun to answer prov.ask for the node.
func TestRunExitsTwoWhenTheControlSocketCannotBeServed(t *testing.T) {
	dir, err := os.MkdirTemp("", "cli") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	busy := filepath.Join(dir, "busy.sock")
	ln, err := net.Listen("unix", busy)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	file := filepath.Join(dir, "creds")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ control, says string }{
		{busy, "run: control socket " + busy + ": another client answers on it"},
		{file, "run: control socket " + file + ": a regular file is there, not a socket"},
		{filepath.Join(file, "c.sock"), "run: control socket " + filepath.Join(file, "c.sock") + ": "},
	} {
		code, _, stderr := runCLIWithin(t, "run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--state-dir", t.TempDir(),
			"--control", c.control)
		if code != 2 || !strings.HasPrefix(stderr, c.says) {
			t.Errorf("--control %s: exit %d, stderr %q; want 2 and %q", c.control, code, stderr, c.says)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Fatalf("the file given as --control: %q %v", b, err)
	}
}

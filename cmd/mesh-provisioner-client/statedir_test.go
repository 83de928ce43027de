package main

import (
	"fmt"
	"os"
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

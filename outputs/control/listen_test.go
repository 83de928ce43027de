package control

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestListenBindsMode0600AndRefusesASocketThatAnswers(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "run", "control.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a socket of mode 0600", path, st.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("beside the socket: %v, want the socket alone (no temporary name left)", entries)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another client answers") {
		t.Fatalf("a second Listen: %v, want it refused", err)
	}
}

// Two daemons of one process (the lab, tests) binding their sockets in one
// directory at once: each gets its own, neither takes the other's
// temporary name (it was .new-<pid> for both, and the second removed the
// first's before binding it).
func TestTwoSocketsBoundAtOnceInOneDirectoryAreEachTheirOwn(t *testing.T) {
	dir := t.TempDir()
	for round := range 20 {
		paths := []string{filepath.Join(dir, fmt.Sprintf("a%d.sock", round)), filepath.Join(dir, fmt.Sprintf("b%d.sock", round))}
		lns := make([]net.Listener, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, p := range paths {
			wg.Go(func() { lns[i], errs[i] = Listen(p) })
		}
		wg.Wait()
		for i, p := range paths {
			if errs[i] != nil {
				t.Fatalf("round %d: %s: %v", round, p, errs[i])
			}
			defer lns[i].Close()
			c, err := net.Dial("unix", p)
			if err != nil {
				t.Fatalf("round %d: %s does not answer: %v", round, p, err)
			}
			c.Close()
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".new-*")); len(left) != 0 {
		t.Fatalf("temporary names left behind: %v", left)
	}
}

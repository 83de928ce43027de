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

// A --control naming a file that is not a socket (a typo, the creds file
// given to the wrong flag): before, the socket was renamed over it and
// the stop removed it, so the file was lost. It is refused, left as it
// was, naming what is there.
func TestListenRefusesAPathThatIsNotASocketAndLeavesIt(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "hosts")
	if err := os.WriteFile(file, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, what string }{{file, "a regular file"}, {link, "a symbolic link"}} {
		ln, err := Listen(c.path)
		if err == nil {
			ln.Close()
			os.Remove(c.path)
			t.Fatalf("%s: bound over %s", c.path, c.what)
		}
		if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.what) {
			t.Fatalf("%s: %v, want it naming the path and %s", c.path, err, c.what)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me\n" {
		t.Fatalf("the file is not as it was: %q %v", b, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is not as it was: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("beside them: %v, want nothing left", entries)
	}
}

package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Bound with a permissive umask, the socket is at path with the mode asked
// for, answers there, and nothing else is left in its directory (the
// temporary name it was bound under was renamed).
func TestASocketIsInPlaceWithItsModeAndNothingBeside(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "fill.sock")
	for _, mode := range []os.FileMode{0o660, 0o600} {
		ln, err := Listen(path, mode)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want a socket of mode %v", path, fi.Mode(), err, mode)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%d entries in %s, want the socket alone", len(entries), dir)
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		ln.Close()
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("closing the listener removed %s: %v", path, err)
		}
	}
}

// Before its mode is set, the socket is where no other user can reach it:
// in a directory of this user's, mode 0700 (beside path, a connection could
// be made to the temporary name in that moment and be served as root).
// A path whose directory is too long for that one's name is bound beside it.
func TestBeforeItsModeIsSetTheSocketIsInAPrivateDirectory(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	var seen string
	defer func(h func(string)) { beforeChmod = h }(beforeChmod)
	beforeChmod = func(tmp string) {
		seen = tmp
		fi, err := os.Stat(filepath.Dir(tmp))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("the temporary name %s is in a directory of mode %v (%v), want 0700", tmp, fi.Mode(), err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "fill.sock")
	ln, err := Listen(path, 0o660)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if filepath.Dir(seen) == dir {
		t.Errorf("bound at %s, beside %s", seen, path)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in %s, want the socket alone", len(entries), dir)
	}

	// in a directory too long for a private one's name to fit: bound beside it
	deep := dir + "/"
	for len(deep) < MaxPath-10 {
		deep += "y"
	}
	if err := os.Mkdir(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	long := deep + "/s.sock"
	beforeChmod = func(tmp string) { seen = tmp }
	ln, err = Listen(long, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if filepath.Dir(seen) != deep {
		t.Errorf("a path in a directory near the limit was bound at %s", seen)
	}
	if fi, err := os.Lstat(long); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v %v", long, fi, err)
	}
}

// A path too long for a unix socket, its directory included, is refused
// with an error naming it and the limit (it made listenBeside panic on a
// negative length: `mesh-fill serve --socket <a long path>` crashed).
func TestAPathTooLongIsRefusedNotACrash(t *testing.T) {
	base := t.TempDir()
	for _, dirLen := range []int{MaxPath - len(base), MaxPath + 10 - len(base)} {
		dir := filepath.Join(base, strings.Repeat("d", max(dirLen, 1)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "fill.sock")
		ln, err := Listen(path, 0o600)
		if err == nil {
			ln.Close()
			t.Fatalf("Listen(%d-byte path): no error", len(path))
		}
		want := fmt.Sprintf("%s: the path is %d bytes, longer than a unix socket's limit of %d", path, len(path), MaxPath)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Listen(%d-byte path): %v, want %q", len(path), err, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Listen left %v in %s", entries, dir)
		}
	}
}

package unixsock

import (
	"net"
	"os"
	"path/filepath"
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

package fill

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestATempFileHoldsItsBytesForNoOneElseBeforeItsOwnerIsSet: a temp file
// holds the request's bytes (a secret maybe) from its write until its
// owner and mode are set. Made with the request's mode (0640), it was
// meanwhile its maker's: mesh-fill's group (the group the example unit
// shares its socket through), or a setgid directory's, could open it then
// and read the bytes through that descriptor for good. It is made 0600,
// for mesh-fill alone, and given its mode once its owner is set.
func TestATempFileHoldsItsBytesForNoOneElseBeforeItsOwnerIsSet(t *testing.T) {
	var mu sync.Mutex
	var seen []os.FileMode
	tempWritten = func(f *os.File) {
		fi, err := f.Stat()
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		seen = append(seen, fi.Mode().Perm())
		mu.Unlock()
	}
	t.Cleanup(func() { tempWritten = nil })
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Files: []File{
		{Path: "/etc/a.conf", Form: FormOwned, Content: []byte("s3cr3t\n"), Mode: "0640"},
		{Path: "/etc/b.conf", Form: FormManagedKeys, Content: []byte("K=s3cr3t\n"), Mode: "0664"},
	}})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d temp files seen, want 2", len(seen))
	}
	for _, m := range seen {
		if m&0o077 != 0 {
			t.Errorf("a temp file held its bytes with mode %04o before its owner was set", m)
		}
	}
	mustMode(t, filepath.Join(root, "etc/a.conf"), 0o640)
	mustMode(t, filepath.Join(root, "etc/b.conf"), 0o664)
}

package fill

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAStateFileThatIsAFifoOrASymlinkStopsTheStart: a state or pending
// file that is a named pipe (opened, it would wait for a writer for ever:
// mesh-fill hung at start, its socket never made) or a symbolic link (its
// target, anywhere, read as the state of root's files) stops mesh-fill's
// start at once, naming the file and what it is.
func TestAStateFileThatIsAFifoOrASymlinkStopsTheStart(t *testing.T) {
	for _, tc := range []struct{ name, file string }{
		{"fifo", "module-" + moduleDigest("m") + ".json"},
		{"fifo", "pending-" + moduleDigest("m") + ".json"},
		{"symlink", "module-" + moduleDigest("m") + ".json"},
		{"symlink", "pending-" + moduleDigest("m") + ".json"},
	} {
		t.Run(tc.name+" "+tc.file[:7], func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			if err := os.Chmod(state, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(state, tc.file)
			switch tc.name {
			case "fifo":
				if err := unix.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			case "symlink":
				elsewhere := filepath.Join(t.TempDir(), "state.json")
				writeFile(t, elsewhere, `{"module":"m","files":{}}`)
				if err := os.Symlink(elsewhere, p); err != nil {
					t.Fatal(err)
				}
			}
			err := startRefused(t, &Server{Root: root, StateDir: state})
			wantSaid(t, err, p, "not a regular file")
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestARootThatIsAFileExitsNonZeroSayingSo: --root naming a regular file
// (a typo, a path swapped) or nothing at all stops mesh-fill at start with
// exit 2 and a line naming the flag and what is at the path, before its
// socket or state dir is made.
func TestARootThatIsAFileExitsNonZeroSayingSo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "root.conf")
	if err := os.WriteFile(file, []byte("not a dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ root, says string }{
		{file, "--root " + file + " is a regular file, not a directory"},
		{filepath.Join(dir, "missing"), "--root " + filepath.Join(dir, "missing") + " is not there"},
	} {
		p := start(t, "--root", tc.root)
		if code := p.exit(t); code != 2 {
			t.Errorf("--root %s: exit %d, want 2; stderr:\n%s", tc.root, code, p.said())
		}
		if !strings.Contains(p.said(), tc.says) || strings.Contains(p.said(), "<nil>") {
			t.Errorf("--root %s: stderr should say %q:\n%s", tc.root, tc.says, p.said())
		}
		mustNotExist(t, p.sock)
	}
}

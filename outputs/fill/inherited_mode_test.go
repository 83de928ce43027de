package fill

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestAManagedFileOthersMayWriteIsNarrowedWhenNoModeIsNamed: an existing
// file a module manages keys or a block in keeps its own mode when the
// request names none, but not the write bit of others: mesh-fill refuses
// to write a file any local user may rewrite when a request names such a
// mode, and a file found so (0666, 0646) is no different. The file is
// written 0664 or 0644 with the module's keys or block; one whose text
// is already right is written for its mode alone ("written"), and a file
// others may not write (0640) keeps its mode.
func TestAManagedFileOthersMayWriteIsNarrowedWhenNoModeIsNamed(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for i, tc := range []struct {
		form, before, content, after string
		mode, want                   os.FileMode
		action                       string
	}{
		{FormManagedKeys, "a=0\nb=1\n", "a=1\n", "a=1\nb=1\n", 0o666, 0o664, ActionMerged},
		{FormManagedKeys, "a=1\n", "a=1\n", "a=1\n", 0o646, 0o644, ActionWritten},
		{FormManagedBlock, "x\n", "in\n", "x\n# BEGIN mesh m\nin\n# END mesh m\n", 0o666, 0o664, ActionMerged},
		{FormManagedKeys, "a=0\n", "a=1\n", "a=1\n", 0o640, 0o640, ActionMerged},
	} {
		name := fmt.Sprintf("/f%d", i)
		p := filepath.Join(root, name)
		writeFile(t, p, tc.before)
		if err := os.Chmod(p, tc.mode); err != nil {
			t.Fatal(err)
		}
		resp := fillOK(t, c, Request{Module: "m", Files: []File{{Path: name, Form: tc.form, Content: []byte(tc.content)}}})
		mustRead(t, p, tc.after)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.want {
			t.Errorf("%s over a file of mode %04o, no mode named: written %04o, want %04o", tc.form, tc.mode, fi.Mode().Perm(), tc.want)
		}
		if got := resp.Files[0]; got.Action != tc.action || got.Digest != sha([]byte(tc.after)) {
			t.Errorf("%s over a file of mode %04o: answered %+v, want %s with the digest of %q", tc.form, tc.mode, got, tc.action, tc.after)
		}
	}
}

package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A whole request that is refused (403 outside --allow, 409 a path held by
// another module) writes nothing: it removes nothing either, and the
// module's declaration stays the last whole request it took.
func TestARefusedWholeRequestRemovesNothing(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Allow: []string{"/etc/m/**", "/etc/n/**"}})
	fillOK(t, c, Request{Module: "n", Whole: true, Files: []File{{Path: "/etc/n/held", Form: FormOwned, Content: []byte("n\n")}}})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
		{Path: "/etc/m/a", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/m/b", Form: FormOwned, Content: []byte("b\n")},
	}})
	for _, tc := range []struct {
		f      File
		status int
	}{
		{File{Path: "/etc/other", Form: FormOwned, Content: []byte("x\n")}, http.StatusForbidden},
		{File{Path: "/etc/n/held", Form: FormOwned, Content: []byte("x\n")}, http.StatusConflict},
	} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{
			{Path: "/etc/m/a", Form: FormOwned, Content: []byte("a\n")}, tc.f}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != tc.status {
			t.Fatalf("%s: want %d, got %v", tc.f.Path, tc.status, err)
		}
		mustRead(t, filepath.Join(root, "etc/m/b"), "b\n")
	}
	// the declaration is still a and b: a whole request naming a alone removes b
	wholeOfARemovesB(t, c, root)
}

// A file a request of changed files alone wrote is the module's too: the
// next whole request that does not name it removes it.
func TestAFileWrittenByAPartialRequestIsRemovedByTheNextWhole(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/m/a", Form: FormOwned, Content: []byte("a\n")}}})
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/m/b", Form: FormOwned, Content: []byte("b\n")}}})
	// and another module may not take it meanwhile
	_, err := c.Fill(t.Context(), Request{Module: "n", Files: []File{{Path: "/etc/m/b", Form: FormOwned, Content: []byte("n\n")}}})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict {
		t.Errorf("n over m's partial file: %v", err)
	}
	wholeOfARemovesB(t, c, root)
}

// wholeOfARemovesB sends module m's whole request naming /etc/m/a alone
// and checks /etc/m/b, which m wrote, is answered removed and is gone.
func wholeOfARemovesB(t *testing.T, c *Client, root string) {
	t.Helper()
	resp, err := c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/m/a", Form: FormOwned, Content: []byte("a\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(resp.Files); got["/etc/m/b"] != ActionRemoved {
		t.Errorf("answer %v", got)
	}
	mustAbsent(t, filepath.Join(root, "etc/m/b"))
}

// A removal follows no symlink: an owned file's directory replaced by a
// link elsewhere since it was written leaves what the link reaches alone.
func TestARemovalFollowsNoSymlinkedDirectory(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
		{Path: "/etc/m/a", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/m/b", Form: FormOwned, Content: []byte("b\n")},
	}})
	other := filepath.Join(root, "other")
	writeFile(t, filepath.Join(other, "b"), "not m's\n")
	if err := os.RemoveAll(filepath.Join(root, "etc/m")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root, "etc/m")); err != nil {
		t.Fatal(err)
	}
	c.Fill(t.Context(), Request{Module: "m", Whole: true, Files: []File{}})
	mustRead(t, filepath.Join(other, "b"), "not m's\n")
	c.Delete(t.Context(), "m")
	mustRead(t, filepath.Join(other, "b"), "not m's\n")
}

// TestARemovalLeavesWhatReplacedTheFile: an owned file replaced, since it
// was written, by a symlink (to a file outside the root), a directory or a
// named pipe is no longer the file written: a DELETE answers 200 without
// it, and leaves it, what the link reaches and what the directory holds
// (nothing is removed recursively, nothing followed, no pipe opened).
func TestARemovalLeavesWhatReplacedTheFile(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	writeFile(t, outside, "precious\n")
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{
		{Path: "/etc/m/link", Form: FormOwned, Content: []byte("a\n")},
		{Path: "/etc/m/dir", Form: FormOwned, Content: []byte("b\n")},
		{Path: "/etc/m/fifo", Form: FormOwned, Content: []byte("c\n")},
		{Path: "/etc/m/file", Form: FormOwned, Content: []byte("d\n")},
	}})
	at := func(name string) string { return filepath.Join(root, "etc/m", name) }
	for _, name := range []string{"link", "dir", "fifo"} {
		if err := os.Remove(at(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, at("link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(at("dir"), "inside"), "inside\n")
	if err := syscall.Mkfifo(at("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := c.Delete(t.Context(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Path != "/etc/m/file" || files[0].Action != ActionRemoved {
		t.Errorf("DELETE answered %+v, want /etc/m/file removed alone", files)
	}
	mustAbsent(t, at("file"))
	mustRead(t, outside, "precious\n")
	if fi, err := os.Lstat(at("link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was not left (%v)", err)
	}
	mustRead(t, filepath.Join(at("dir"), "inside"), "inside\n")
	if fi, err := os.Lstat(at("fifo")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the fifo was not left (%v)", err)
	}
}

package fill

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestARootSwappedForASymlinkIsNotWrittenThrough: --root is the directory
// it named at start. One who may write the root's parent moves the root
// away and puts there a symlink to a directory of their choice (root's
// /etc, say): the next request is refused (500) naming the root, nothing
// is written through the link nor into the directory moved; put back, the
// root is written again. Removed, it is refused the same way. Before, the
// root was looked up by its path at each request, and the request was
// written where the symlink led.
func TestARootSwappedForASymlinkIsNotWrittenThrough(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	c := startServer(t, &Server{Root: root})
	one := func(m string) Request {
		return Request{Module: m, Files: []File{{Path: "/etc/" + m + ".conf", Form: FormOwned, Content: []byte(m + "\n")}}}
	}
	fillOK(t, c, one("before"))

	if err := os.Rename(root, root+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, root); err != nil {
		t.Fatal(err)
	}
	_, err := c.Fill(t.Context(), one("swapped"))
	wantStatus(t, err, http.StatusInternalServerError, "root "+root+" is no longer the directory mesh-fill started with")
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("written through the symlink: %v", entries)
	}
	mustRead(t, filepath.Join(root+".moved", "etc/before.conf"), "before\n")
	_, err = c.Delete(t.Context(), "before")
	wantStatus(t, err, http.StatusInternalServerError, "is no longer the directory mesh-fill started with")
	mustRead(t, filepath.Join(root+".moved", "etc/before.conf"), "before\n")

	// put back: written again
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(root+".moved", root); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, one("again"))
	mustRead(t, filepath.Join(root, "etc/again.conf"), "again\n")

	// removed: said so, nothing made
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	_, err = c.Fill(t.Context(), one("before"))
	wantStatus(t, err, http.StatusInternalServerError, "root "+root+" is no longer the directory mesh-fill started with")
	mustAbsent(t, root)
}

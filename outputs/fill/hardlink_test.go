package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAHardLinkedFileIsNotMergedIntoANewFile: a managed-keys or
// managed-block file is written whole from the text there, through a temp
// file renamed over it (never edited in place). One who may write its
// directory could put there a hard link to a file they may not read
// (/etc/shadow, where fs.protected_hardlinks is off): its text would come
// out in a new file of the request's mode (0644). A file with another name
// is refused (400, naming the path and its hard links) and left as it is, in a
// fill and in a removal of a block; an owned file is not read into what is
// written, and its rename replaces that one name alone.
func TestAHardLinkedFileIsNotMergedIntoANewFile(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$hash:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, &Server{Root: root})
	if err := os.MkdirAll(filepath.Join(root, "srv"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{FormManagedKeys, FormManagedBlock} {
		p := "/srv/" + form
		if err := os.Link(secret, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
			{Path: "/srv/ok", Form: FormOwned, Content: []byte("ok\n")},
			{Path: p, Form: form, Content: []byte("A=1\n"), Mode: "0644"},
		}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, p) || !strings.Contains(se.Msg, "names (hard links)") {
			t.Errorf("%s over a hard link: want a 400 naming %s and its hard links, got %v", form, p, err)
		}
		if err != nil && strings.Contains(err.Error(), "hash") {
			t.Errorf("the linked file's text in the error: %v", err)
		}
		mustAbsent(t, filepath.Join(root, "srv/ok"))
		if !sameInode(t, secret, filepath.Join(root, p)) {
			t.Errorf("%s: the link was replaced", p)
		}
	}
	mustRead(t, secret, "root:$6$hash:1\n")

	// a block written, its file then swapped for a link: its removal leaves it
	blk := filepath.Join(root, "srv/blk")
	fillOK(t, c, Request{Module: "b", Whole: true, Files: []File{{Path: "/srv/blk", Form: FormManagedBlock, Content: []byte("x\n")}}})
	if err := os.WriteFile(secret, []byte("root:$6$hash:1\n# BEGIN mesh b\nx\n# END mesh b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blk); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, blk); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if !sameInode(t, secret, blk) {
		t.Errorf("the removal of a block replaced the hard link at %s", blk)
	}

	// owned: replaced by its rename, the other name keeps its bytes
	own := filepath.Join(root, "srv/own")
	if err := os.Link(secret, own); err != nil {
		t.Fatal(err)
	}
	fillOK(t, c, Request{Module: "o", Files: []File{{Path: "/srv/own", Form: FormOwned, Content: []byte("mine\n"), Mode: "0644"}}})
	mustRead(t, own, "mine\n")
	mustRead(t, secret, "root:$6$hash:1\n# BEGIN mesh b\nx\n# END mesh b\n")
}

func sameInode(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Lstat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Lstat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

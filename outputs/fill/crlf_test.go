package fill

import (
	"path/filepath"
	"testing"
)

// TestManagedBlockKeepsCRLFLineEndings: a managed block in a file of
// CRLF lines (a file edited on Windows, a .bat, a Samba share's config)
// is found by its markers and written with the file's line endings,
// markers and content alike; the next fill finds it unchanged, and the
// module's removal leaves the file as it was.
func TestManagedBlockKeepsCRLFLineEndings(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "etc/smb.conf")
	writeFile(t, p, "[global]\r\nworkgroup = MESH\r\n")

	req := Request{Module: "m", Whole: true, Files: []File{{Path: "/etc/smb.conf", Form: FormManagedBlock, Content: []byte("x = 1\ny = 2\n")}}}
	if got := fillOK(t, c, req).Files[0].Action; got != ActionMerged {
		t.Errorf("first fill: %s, want merged", got)
	}
	mustRead(t, p, "[global]\r\nworkgroup = MESH\r\n# BEGIN mesh m\r\nx = 1\r\ny = 2\r\n# END mesh m\r\n")
	if got := fillOK(t, c, req).Files[0].Action; got != ActionUnchanged {
		t.Errorf("second fill: %s, want unchanged", got)
	}

	req.Files[0].Content = []byte("z = 3\n")
	fillOK(t, c, req)
	mustRead(t, p, "[global]\r\nworkgroup = MESH\r\n# BEGIN mesh m\r\nz = 3\r\n# END mesh m\r\n")

	if _, err := c.Delete(t.Context(), "m"); err != nil {
		t.Fatal(err)
	}
	mustRead(t, p, "[global]\r\nworkgroup = MESH\r\n")

	// a block someone wrote by hand with CRLF markers is found and replaced
	writeFile(t, p, "a\r\n# BEGIN mesh m\r\nold\r\n# END mesh m\r\nb\r\n")
	fillOK(t, c, req)
	mustRead(t, p, "a\r\n# BEGIN mesh m\r\nz = 3\r\n# END mesh m\r\nb\r\n")
}

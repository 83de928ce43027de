package fill

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestModeStringsAreOctalDigitsAlone: a mode is octal digits, a leading 0
// or not ("640" and "00640" are 0640, as chmod reads them); a Python or Go
// literal ("0o640", "0x1a4"), a set-id or sticky mode ("4755") and one
// others may write ("777") are 400s naming the path and the mode, and
// nothing is written.
func TestModeStringsAreOctalDigitsAlone(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, mode := range []string{"640", "00640", "0640"} {
		fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte("x\n"), Mode: mode}}})
		mustMode(t, filepath.Join(root, "f"), 0o640)
		if err := os.Chmod(filepath.Join(root, "f"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"0o640", "0x1a4", "4755", "777", "0640 ", "-640", "0649"} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: "/g", Form: FormOwned, Content: []byte("x\n"), Mode: mode}}})
		wantStatus(t, err, http.StatusBadRequest, `path "/g"`, `mode "`+mode+`"`)
	}
	mustAbsent(t, filepath.Join(root, "g"))
}

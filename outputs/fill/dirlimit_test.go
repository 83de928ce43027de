package fill

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheDirectoriesAWholeRequestRemovesFromCountToo: the directories of
// the files a whole request removes are opened with its own, so they
// count against the limit: with 2, a module in /a and /b moving to /c and
// /d is refused (400, nothing written nor removed), and one moving
// /b/f to /b/g is not.
func TestTheDirectoriesAWholeRequestRemovesFromCountToo(t *testing.T) {
	root := t.TempDir()
	s := &Server{Root: root, dirLimit: 2}
	c := startServer(t, s)
	owned := func(paths ...string) []File {
		var fs []File
		for _, p := range paths {
			fs = append(fs, File{Path: p, Form: FormOwned, Content: []byte("x\n")})
		}
		return fs
	}
	fillOK(t, c, Request{Module: "m", Whole: true, Files: owned("/a/f", "/b/f")})
	_, err := c.Fill(context.Background(), Request{Module: "m", Whole: true, Files: owned("/c/f", "/d/f")})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, "files in 4 directories (2 of them for the files it removes)") {
		t.Fatalf("moving to /c and /d: %v", err)
	}
	mustRead(t, filepath.Join(root, "a/f"), "x\n")
	mustAbsent(t, filepath.Join(root, "c"))
	if _, err := c.Fill(context.Background(), Request{Module: "m", Whole: true, Files: owned("/a/f", "/b/g")}); err != nil {
		t.Fatalf("moving /b/f to /b/g: %v", err)
	}
	mustAbsent(t, filepath.Join(root, "b/f"))
	mustRead(t, filepath.Join(root, "b/g"), "x\n")
}

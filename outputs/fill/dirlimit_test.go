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

// TestAModuleInMoreDirectoriesThanARequestMayOpenIsStillDeleted: with a
// limit of 2, a module whose requests without whole put files in 3
// directories is deleted whole (its files are removed 2 directories at a
// time). Before, its DELETE was refused for ever, and the client sent it
// again at every tick.
func TestAModuleInMoreDirectoriesThanARequestMayOpenIsStillDeleted(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, dirLimit: 2})
	owned := func(p string) File { return File{Path: p, Form: FormOwned, Content: []byte("x\n")} }
	fillOK(t, c, Request{Module: "m", Whole: true, Files: []File{owned("/a/f"), owned("/b/f")}})
	fillOK(t, c, Request{Module: "m", Files: []File{owned("/c/f"), owned("/c/g")}})
	files, err := c.Delete(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Errorf("answered %+v, want 4 files removed", files)
	}
	for _, p := range []string{"a/f", "b/f", "c/f", "c/g"} {
		mustAbsent(t, filepath.Join(root, p))
	}
	// forgotten: another module may take its paths
	fillOK(t, c, Request{Module: "n", Whole: true, Files: []File{owned("/c/f")}})
}

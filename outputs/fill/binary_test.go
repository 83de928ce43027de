package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoMergeIntoABinaryFile: a managed-keys or managed-block request
// naming a file that holds NUL bytes (a binary: a database, an image, a
// compiled policy) is refused (400) naming the file, which is left as it
// was: merging lines into it would corrupt it.
func TestNoMergeIntoABinaryFile(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	bin := "SQLite format 3\x00\x10\x00\x01\x01\nKEY=old\n\x00\x00"
	for _, form := range []string{FormManagedKeys, FormManagedBlock} {
		t.Run(form, func(t *testing.T) {
			p := filepath.Join(root, "var/lib", form+".db")
			writeFile(t, p, bin)
			before, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			at := "/var/lib/" + form + ".db"
			_, err = c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: at, Form: form, Content: []byte("KEY=new\n")}}})
			se, ok := errors.AsType[*StatusError](err)
			if !ok || se.Status != http.StatusBadRequest {
				t.Fatalf("merge into a binary file: %v, want a 400", err)
			}
			if !strings.Contains(se.Msg, at) || !strings.Contains(se.Msg, "binary") {
				t.Errorf("refusal %q should name the file and say it is binary", se.Msg)
			}
			mustRead(t, p, bin)
			after, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(before, after) {
				t.Errorf("the binary file was replaced")
			}
		})
	}
}

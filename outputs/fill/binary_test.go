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

// TestNoNULIsMergedIntoAFile: managed-keys or managed-block content
// holding a NUL byte is refused (400 naming the path and the line, never
// the content), nothing of its request written. Before, it was merged
// (200), and the file was binary from then on: every module's keys and
// blocks there were refused for good, the corrected content too.
func TestNoNULIsMergedIntoAFile(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, Command: []string{"true"}})
	for _, form := range []string{FormManagedKeys, FormManagedBlock} {
		t.Run(form, func(t *testing.T) {
			shared, other := "/etc/"+form+".conf", "/etc/"+form+".other"
			p := filepath.Join(root, shared)
			writeFile(t, p, "Port 22\n")
			bad := Request{Module: "m-" + form, Whole: true, Files: []File{
				{Path: other, Form: FormOwned, Content: []byte("x\n")},
				{Path: shared, Form: form, Content: []byte("A=1\nSECRET=s3cret\x00tail\n")},
			}}
			_, err := c.Fill(t.Context(), bad)
			se, ok := errors.AsType[*StatusError](err)
			if !ok || se.Status != http.StatusBadRequest {
				t.Fatalf("content holding a NUL: %v, want a 400", err)
			}
			if !strings.Contains(se.Msg, shared) || !strings.Contains(se.Msg, "line 2") || !strings.Contains(se.Msg, "NUL") {
				t.Errorf("refusal %q should name the path, the line and the NUL", se.Msg)
			}
			if strings.Contains(se.Msg, "s3cret") {
				t.Errorf("refusal %q quotes the content", se.Msg)
			}
			mustRead(t, p, "Port 22\n")
			mustAbsent(t, filepath.Join(root, other))

			// the file stays one every module merges into
			bad.Files[1].Content = []byte("SECRET=s3cret\n")
			fillOK(t, c, bad)
			fillOK(t, c, Request{Module: "n-" + form, Files: []File{{Path: shared, Form: FormManagedBlock, Content: []byte("B=2\n")}}})
		})
	}
}

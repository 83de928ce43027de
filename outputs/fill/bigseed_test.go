package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestASeedGrownPastMaxBodyIsKept: a seed file is written only when
// absent, and then is its user's: one grown past MaxBody (a log, a
// database the program keeps at that path) is kept, answered "kept" with
// its digest, read in chunks (never whole), and the next fill finds it
// kept again without reading it again; it is not refused, and the
// request's other files are written.
func TestASeedGrownPastMaxBodyIsKept(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	req := Request{Module: "m", Files: []File{
		{Path: "/ok", Form: FormOwned, Content: []byte("ok\n")},
		{Path: "/var/seed.db", Form: FormSeed, Content: []byte("initial\n")},
	}}
	if got := fillOK(t, c, req).Files[1].Action; got != ActionWritten {
		t.Fatalf("first fill of the seed: %s", got)
	}

	p := filepath.Join(root, "var/seed.db")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxBody + 1<<20); err != nil { // sparse
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("tail\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want := fileDigest(t, p)

	for i := range 2 {
		before := allocated()
		resp, err := c.Fill(t.Context(), req)
		if err != nil {
			t.Fatalf("fill %d with a seed grown past MaxBody: %v", i, err)
		}
		if got := resp.Files[1]; got.Action != ActionKept || got.Digest != want {
			t.Errorf("fill %d: seed answered %+v, want kept with digest %s", i, got, want)
		}
		if grew := allocated() - before; grew > 16<<20 {
			t.Errorf("fill %d: keeping a seed of %d bytes allocated %d bytes", i, int64(MaxBody+1<<20), grew)
		}
	}
	mustRead(t, filepath.Join(root, "ok"), "ok\n")
	if fileDigest(t, p) != want {
		t.Errorf("the seed was changed")
	}
}

func fileDigest(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

package fill

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAHugeFileThereIsNotReadWhole: one who may write a directory of a
// file mesh-fill fills can put there a sparse file of any size for no
// disk at all; reading it whole, mesh-fill (root, no memory limit) grew
// until the kernel's OOM killer ended it or another program, at every
// refill. An owned file is read only when it is as long as the content
// (to tell unchanged), so a huge one is replaced; a file a request merges
// into (managed-keys, managed-block) is read up to MaxBody bytes in
// all, and one past that is refused (400 naming the path and its size),
// nothing of the request written, the file left. (A seed there is kept,
// its digest read in chunks: TestASeedGrownPastMaxBodyIsKept.)
func TestAHugeFileThereIsNotReadWhole(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	const huge = 1 << 30 // sparse: no disk, but a GiB read
	sparse := func(name string) string {
		p := filepath.Join(root, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(huge); err != nil {
			t.Fatal(err)
		}
		return p
	}

	owned := sparse("owned")
	before := allocated()
	if got := fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/owned", Form: FormOwned, Content: []byte("small\n")}}}).Files[0].Action; got != ActionWritten {
		t.Errorf("owned over a huge file: %s, want %s", got, ActionWritten)
	}
	mustRead(t, owned, "small\n")
	if grew := allocated() - before; grew > 64<<20 {
		t.Errorf("filling an owned file over one of %d bytes allocated %d bytes", huge, grew)
	}

	for _, form := range []string{FormManagedKeys, FormManagedBlock} {
		p := sparse(form)
		before := allocated()
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
			{Path: "/ok", Form: FormOwned, Content: []byte("ok\n")},
			{Path: "/" + form, Form: form, Content: []byte("A=1\n")},
		}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, `"/`+form+`"`) || !strings.Contains(se.Msg, "1073741824 bytes") {
			t.Errorf("%s over a huge file: want a 400 naming it and its size, got %v", form, err)
		}
		if grew := allocated() - before; grew > 2*MaxBody {
			t.Errorf("%s over a file of %d bytes allocated %d bytes", form, huge, grew)
		}
		mustAbsent(t, filepath.Join(root, "ok"))
		if fi, err := os.Stat(p); err != nil || fi.Size() != huge {
			t.Errorf("%s: the file there was changed (%v)", form, err)
		}
	}
}

// allocated is how many bytes this process has allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestNoMergedFileGrowsPastWhatIsReadToMerge: a managed block whose file
// would be over maxRead bytes once merged is refused (400 naming the path
// and the size), the file left: every module's fill there (the block's
// own removal too) would be refused after, the file too large to read.
func TestNoMergedFileGrowsPastWhatIsReadToMerge(t *testing.T) {
	defer func(was int64) { maxRead = was }(maxRead)
	maxRead = 1 << 20
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "big.conf")
	line := "# a long comment line of a long configuration file\n"
	text := strings.Repeat(line, int(maxRead/2)/len(line)) // half of it
	writeFile(t, p, text)
	block := bytes.Repeat([]byte("v"), int(maxRead/2+64<<10)) // and more than half
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
		{Path: "/ok", Form: FormOwned, Content: []byte("ok\n")},
		{Path: "/big.conf", Form: FormManagedBlock, Content: block},
	}})
	se, ok := errors.AsType[*StatusError](err)
	if !ok || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, `"/big.conf"`) || !strings.Contains(se.Msg, "would be") {
		t.Fatalf("a merge past %d bytes: %v, want a 400 naming the path and the size", maxRead, err)
	}
	mustAbsent(t, filepath.Join(root, "ok"))
	if got := readFile(t, p); got != text {
		t.Errorf("the file there was changed (%d bytes)", len(got))
	}
	// within it, the block is merged
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/big.conf", Form: FormManagedBlock, Content: []byte("v\n")}}})
}

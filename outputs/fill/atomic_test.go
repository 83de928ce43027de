package fill

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestRewriteIsAtomic rewrites a large file many times while a reader keeps
// reading it: every read must be one whole version, never a partial file.
func TestRewriteIsAtomic(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	p := filepath.Join(root, "data/big")
	versions := [][]byte{
		bytes.Repeat([]byte("a"), 512<<10),
		bytes.Repeat([]byte("b"), 256<<10+12345),
	}
	fill := func(i int) {
		t.Helper()
		req := Request{Module: "m", Files: []File{{Path: "/data/big", Form: FormOwned, Content: versions[i%2]}}}
		if got := fillOK(t, c, req).Files[0].Action; got != ActionWritten {
			t.Fatalf("rewrite %d: %s", i, got)
		}
	}
	fill(0)

	stop := make(chan struct{})
	done := make(chan error, 1)
	var reads atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			b, err := os.ReadFile(p)
			if err != nil {
				done <- err
				return
			}
			if !bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1]) {
				done <- fmt.Errorf("partial file seen: %d bytes", len(b))
				return
			}
			reads.Add(1)
		}
	}()
	for i := 1; i <= 20; i++ {
		fill(i)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Fatal("the reader never read")
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("temp files left: %d entries", len(entries))
	}
}

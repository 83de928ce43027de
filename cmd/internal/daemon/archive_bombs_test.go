package daemon

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// bombArchives makes n gzip bombs, each a different archive (its digest
// its own) of a few hundred KB that expands to a first member of big
// bytes and a second one taking the contents past the 64 MiB limit. The
// n share their large part: gzip readers take concatenated streams, so
// each is a small gzip stream of its own member, then the shared one.
func bombArchives(t *testing.T, n int, big int64) [][]byte {
	t.Helper()
	gz := func(tarBytes []byte) []byte {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		w.Write(tarBytes)
		w.Close()
		return b.Bytes()
	}
	var shared bytes.Buffer
	tw := tar.NewWriter(&shared)
	zeros := make([]byte, 1<<20)
	for _, m := range []struct {
		name string
		size int64
	}{{"t", big}, {"u", spec.MaxArchiveBytes - big + 1<<20}} {
		if err := tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o644, Size: m.size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		for left := m.size; left > 0; left -= int64(len(zeros)) {
			tw.Write(zeros[:min(left, int64(len(zeros)))])
		}
	}
	tw.Close()
	tail := gz(shared.Bytes())
	out := make([][]byte, n)
	for i := range out {
		var head bytes.Buffer
		hw := tar.NewWriter(&head)
		id := fmt.Sprintf("bomb %d\n", i)
		hw.WriteHeader(&tar.Header{Name: "id", Mode: 0o644, Size: int64(len(id)), Typeflag: tar.TypeReg})
		hw.Write([]byte(id))
		hw.Flush() // no end of archive: the shared part follows
		out[i] = append(gz(head.Bytes()), tail...)
	}
	return out
}

// heapPeak samples the bytes of live heap objects until stop, and returns
// the largest it saw.
func heapPeak(stop <-chan struct{}) func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			rtmetrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { <-done; return peak.Load() }
}

// Sixteen modules, each naming its own gzip bomb (a few hundred KB that
// expand past the 64 MiB limit: its first member alone is 60 MiB), are
// each refused, naming the limit, and the node's other module fills. The
// client reads archives a few at a time: it never holds sixteen bombs
// expanded at once (its heap stays far below 16 × 60 MiB), so a plan's
// author cannot have the client killed for its memory, and every module
// of the node with it.
func TestSixteenGzipBombsAreRefusedWithoutTheClientHoldingThemAllExpanded(t *testing.T) {
	if testing.Short() {
		t.Skip("expands 16 × 65 MiB")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // the heap measured is close to what is live
	const n, big = 16, 60 << 20
	m := newMesh(t)
	m.webModule()
	for i, data := range bombArchives(t, n, big) {
		mod := fmt.Sprintf("b%d", i)
		p := plan1("/etc/" + mod + "/f")
		p.Templates.Ref, p.Templates.Digest = m.rawArchive(mod+".tar.gz", data)
		m.assign("ace", mod, p, nil)
	}
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	base := s[0].Value.Uint64()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	// No try again within the test: each bomb is read once. So no try may
	// end for time either: a try's timeout (30 s by default) counts the
	// wait for an expansion slot (two at a time, inputs/archive/expand.go),
	// and the last of 17 archives waits for 16 × 65 MiB expanded before it,
	// which takes over 30 s under -race on a loaded machine (b7 was left
	// waiting "not fetched within 30s").
	m.client("ace", func(c *Config) {
		c.BackoffMin, c.BackoffMax, c.FetchTimeout = time.Hour, time.Hour, 10*time.Minute
	})
	m.waitStateFor("ace", "web", "applied", 90*time.Second) // its archive read beside the bombs'
	for i := range n {
		// 16 × 65 MiB expanded a few at a time: well over 10 s under
		// -race on a loaded machine.
		r := m.waitStateFor("ace", fmt.Sprintf("b%d", i), "failed", 90*time.Second)
		if why := fmt.Sprint(r["reason"]); !contains(why, "over 64 MiB uncompressed") {
			t.Errorf("b%d: reason %q does not name the limit", i, why)
		}
	}
	close(stop)
	grew := int64(peak()) - int64(base)
	t.Logf("heap grew by %d MiB at most", grew>>20)
	if limit := int64(400 << 20); grew > limit {
		t.Errorf("the heap grew by %d MiB while the bombs were read: more than %d archives expanded at once (want at most %d MiB)",
			grew>>20, grew/big, limit>>20)
	}
}

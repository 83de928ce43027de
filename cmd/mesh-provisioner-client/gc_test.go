package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// gcChildEnv names the file TestThePacerCollectsLikeGOGC50WithoutForcedCollections's
// child writes what it measured to: the pacer turns GOGC off for the whole
// process, so it runs in a process of its own.
const gcChildEnv = "CLIENT_GC_PACER_CHILD"

// The daemon's own pacer (gc.go) turns GOGC off, so the runtime's 2-minute
// forced collection never comes (its time trigger is off with GOGC off;
// BenchmarkClientProcess/files=10000/idle shows a whole idle period
// without one), and still collects a heap that grows about as GOGC=50
// did: the same allocations (64 MiB made live, 640 MiB of garbage beside
// it, then the live heap dropped and 640 MiB more), run once under
// GOGC=50 and once paced, take about as many collections (not none, not
// back to back), and the limit comes down once the live heap is dropped.
func TestThePacerCollectsLikeGOGC50WithoutForcedCollections(t *testing.T) {
	if out := os.Getenv(gcChildEnv); out != "" {
		allocate(t, out)
		return
	}
	child := func(gogc string) measured {
		out := filepath.Join(t.TempDir(), "measured.json")
		p := inChild(t, gcChildEnv+"="+out, "GOGC="+gogc, "GOMEMLIMIT=")
		if err := p.Cmd.Wait(); err != nil {
			t.Fatalf("GOGC=%q: the child failed (%v):\n%s", gogc, err, p.Output())
		}
		for _, g := range p.GCs() {
			if g.Forced {
				t.Errorf("GOGC=%q: a forced collection:\n%s", gogc, p.Output())
			}
		}
		var m measured
		b, err := os.ReadFile(out)
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			t.Fatalf("GOGC=%q: %v:\n%s", gogc, err, p.Output())
		}
		return m
	}
	ref, paced := child("50"), child("")
	t.Logf("GOGC=50 %+v, paced %+v", ref, paced)
	if c, r := paced.LiveCollections, ref.LiveCollections; c < 3 || c < r/2 || c > 2*r+2 {
		t.Errorf("640 MiB of garbage beside 64 MiB live: %d collections paced, %d with GOGC=50", c, r)
	}
	if c := paced.DroppedCollections; c < 3 || c > 640/4+20 {
		t.Errorf("640 MiB of garbage with nothing live: %d collections paced, want some and at most one per 4 MiB (the least growth)", c)
	}
	if l := paced.LimitLive; l < 96*mib || l > 128*mib {
		t.Errorf("the memory limit was %d MiB with 64 MiB live, want the live heap and half (96 MiB) and what else the runtime holds", l/mib)
	}
	if l := paced.LimitDropped; l > 32*mib {
		t.Errorf("the memory limit was %d MiB once the live heap was dropped: it did not follow the heap down", l/mib)
	}
}

const mib = 1 << 20

// measured is what the child saw.
type measured struct {
	LiveCollections, DroppedCollections uint64
	LimitLive, LimitDropped             int64 // the pacer's, after each phase
}

// allocate is the child: it makes 64 MiB live, 640 MiB of garbage, drops
// the live heap, makes 640 MiB of garbage again, and writes what the
// runtime did to out.
func allocate(t *testing.T, out string) {
	p := tuneGC()
	if (p == nil) != (os.Getenv("GOGC") != "") {
		t.Fatalf("GOGC=%q, pacer %v", os.Getenv("GOGC"), p != nil)
	}
	read := func(name string) uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	if gogc := int64(read("/gc/gogc:percent")); p != nil && gogc != -1 {
		t.Fatalf("GOGC = %d, want off (-1): the runtime would force a collection every 2 minutes", gogc)
	}
	limit := func() int64 {
		if p == nil {
			return 0
		}
		return p.limit.Load()
	}
	cycles := func() uint64 { return read("/gc/cycles/total:gc-cycles") }
	var sink []byte
	garbage := func() uint64 {
		c0 := cycles()
		for i := range 640 * 16 {
			sink = make([]byte, 64<<10)
			if i%16 == 0 {
				// At most ~1 GiB/s, not the memory's bandwidth: a
				// collection is not outrun before it ends, as no daemon
				// would outrun it.
				time.Sleep(time.Millisecond)
			}
		}
		return cycles() - c0
	}
	var m measured
	var live [][]byte
	for range 64 * 16 {
		live = append(live, make([]byte, 64<<10))
	}
	m.LiveCollections = garbage()
	m.LimitLive = limit()
	runtime.KeepAlive(live)
	live = nil
	m.DroppedCollections = garbage()
	m.LimitDropped = limit()
	b, _ := json.Marshal(m)
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = sink
}

// Until the cold start is answered a small heap may grow by 16 MiB before
// it is collected again, after it by 4 MiB; a large heap grows by half
// either way, so the peak of a large node does not move.
func TestTheColdStartGrowsTheHeapFurtherBetweenCollectionsUntilSettled(t *testing.T) {
	p := newPacer()
	if g := p.growth(2*mib, 0, 0); g != coldMinGrowth {
		t.Errorf("cold start, 2 MiB live: may grow %d MiB, want %d", g/mib, coldMinGrowth/mib)
	}
	if g := p.growth(100*mib, 0, 0); g != 50*mib {
		t.Errorf("cold start, 100 MiB live: may grow %d MiB, want half (50)", g/mib)
	}
	p.settled()
	if g := p.growth(2*mib, 0, 0); g != minGrowth {
		t.Errorf("settled, 2 MiB live: may grow %d MiB, want %d", g/mib, minGrowth/mib)
	}
	if g := p.growth(100*mib, 0, 0); g != 50*mib {
		t.Errorf("settled, 100 MiB live: may grow %d MiB, want half (50)", g/mib)
	}
	var nilPacer *pacer
	nilPacer.settled() // the operator's GOGC: nothing to settle
}

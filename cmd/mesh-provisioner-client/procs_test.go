package main

import (
	"github.com/rs/zerolog"
	"math"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestOneProcAfterTheColdStartUnlessTheOperatorChoseGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "3")
	if oneProcAfterColdStart() != nil {
		t.Fatal("GOMAXPROCS set by the operator: the daemon must keep it")
	}
	t.Setenv("GOMAXPROCS", "")
	settled := oneProcAfterColdStart()
	if settled == nil {
		t.Fatal("no OnSettled without GOMAXPROCS in the environment")
	}
	runtime.GOMAXPROCS(2)
	settled()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d after the cold start, want 1", n)
	}
}

// Once the cold start is answered the daemon collects once, giving the
// room back to the OS, then collapses its heap into huge pages, and then
// keeps one P; its pacer lets the heap grow by the settled least from then
// on.
func TestAfterTheColdStartOneCollectionThenHugePagesThenOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	runtime.GOMAXPROCS(2)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	p := newPacer()
	var forcedAtHuge atomic.Uint32
	forcedAtHuge.Store(math.MaxUint32)
	afterColdStart(p, &hugeHeap{log: zerolog.Nop(), collapse: func() (collapsed, error) {
		if runtime.GOMAXPROCS(0) != 2 {
			t.Error("one P before the heap was collapsed")
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		forcedAtHuge.Store(m.NumForcedGC)
		return collapsed{}, nil
	}})()
	if g := p.growth(0, 0, 0); g != minGrowth {
		t.Errorf("the pacer's least growth is %d MiB after the cold start, want %d", g/mib, minGrowth/mib)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.GOMAXPROCS(0) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("still more than one P 10 s after the cold start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumForcedGC <= before.NumForcedGC {
		t.Fatalf("no collection after the cold start (forced collections %d → %d)", before.NumForcedGC, after.NumForcedGC)
	}
	if n := forcedAtHuge.Load(); n == math.MaxUint32 || n <= before.NumForcedGC {
		t.Fatalf("the heap was not collapsed after the settling collection (forced collections then: %d, before: %d)", n, before.NumForcedGC)
	}
}

package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The daemon's heap is almost all its graph (about 10 KB per filled file),
// live for as long as the node's modules are, and an idle daemon allocates
// next to nothing. Go's own pacer fits neither well:
//
//   - GOGC=100 (Go's default) lets the heap grow to twice what is live, which
//     doubled a node's resident set for little gain; GOGC=50 (what the daemon
//     ran with until issue 20's second pass) takes a 10,000-file node's peak
//     from ~235 MiB to ~205 MiB, with the collector a few percent of a cold
//     start. A fixed memory limit would starve a node with ten times the
//     files (the collector running back to back once the live heap passed
//     it), so the growth must stay proportional.
//   - With any GOGC, the runtime collects every 2 minutes whether anything
//     was allocated or not (its forced collection, which it skips only when
//     GOGC is off): marking the whole live heap, ~110 ms of CPU at 10,000
//     files and ~2.7 s at 100,000, most of an idle node's CPU.
//
// So the daemon paces the collector itself, as GOGC=50 would without the
// forced collection: GOGC off, and a soft memory limit (debug.SetMemoryLimit)
// that is set again after every collection to what the runtime holds besides
// heap objects plus the live heap grown by half (gcGrowthPercent; the stacks
// and globals count as they do for GOGC), at least minGrowth (coldMinGrowth
// until the cold start is answered). The heap
// reaching that limit is then the only thing that starts a collection: a
// node that allocates nothing is not collected at all, and one that
// allocates is collected when its heap has grown by half again, like GOGC=50.
//
// It learns of each collection from a sentinel object armed with a
// finalizer: the finalizer runs once the collection has found the sentinel
// unreachable, reads the live heap the collection marked (runtime/metrics),
// sets the new limit and arms a new sentinel. Nothing polls or ticks.
//
// How the memory limit behaves (the runtime/debug docs and the GC guide):
// it is soft, so the heap may pass it, and the collector's CPU is then
// capped at about half the process's (the runtime's limiter), which with
// the limit raised after each collection lasts at most until the next
// finalizer; the runtime keeps 3 % of what the limit leaves the heap (at
// least 1 MiB) as headroom, taken into account below; and a limit below
// what the runtime already holds makes it collect again at once until its
// scavenger has given the excess back to the OS, which is why the limit
// is never lowered by more than an eighth at a time (a heap that shrank is
// followed down over a few collections instead of collected back to back;
// bounding it by what the runtime holds instead fed on itself: a heap that
// overshot its goal kept the limit up, which let it overshoot again).
//
// An operator who sets GOGC or GOMEMLIMIT keeps the runtime's own pacer
// with what they set.

const (
	// gcGrowthPercent is how much the heap may grow between two
	// collections, as GOGC would say it.
	gcGrowthPercent = 50
	// minGrowth is the least the heap may grow between two collections: a
	// small heap is not collected after every few allocations.
	minGrowth = 4 << 20
	// coldMinGrowth is minGrowth until the cold start is answered
	// (pacer.settled). A cold start builds its graph while it makes ~3 MB of
	// garbage for each MB it keeps; at 4 MB the heap of a 10,000-file node
	// was collected ~27 times on its way to ~45 MB live, each marking what
	// was live then, on the cores mesh-fill was writing with. At 16 MB it
	// is ~14 times, and the peak, where the heap is large enough that half
	// of it is more than 16 MB, is the same; a small node may hold up to
	// 12 MB more until it settles, which its settling collection gives back.
	coldMinGrowth = 16 << 20
	// heapHeadroomPercent is the share of the heap goal the runtime keeps
	// below the memory limit (runtime.memoryLimitHeapGoalHeadroomPercent).
	heapHeadroomPercent = 3
)

// tuneGC starts the daemon's pacer unless the operator chose the
// collector's settings (GOGC or GOMEMLIMIT in the environment), which are
// kept as set (nil then).
func tuneGC() *pacer {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	p := newPacer()
	p.pace() // before GOGC is off, so that the heap is never unbounded
	debug.SetGCPercent(-1)
	p.arm()
	return p
}

// pacer sets the memory limit after each collection.
type pacer struct {
	samples []metrics.Sample
	limit   atomic.Int64 // the limit last set: the next is not below 7/8 of it
	least   atomic.Int64 // the least growth: coldMinGrowth, then minGrowth once settled
	after   atomic.Pointer[func(live uint64)]
}

// afterEach has f told the live heap after each collection (the huge
// pages' regrowth). A nil pacer (the operator's GOGC) tells nothing.
func (p *pacer) afterEach(f func(live uint64)) {
	if p != nil {
		p.after.Store(&f)
	}
}

// settled says the cold start is answered: the least growth is minGrowth
// from the next collection on. A nil pacer (the operator's GOGC) ignores it.
func (p *pacer) settled() {
	if p != nil {
		p.least.Store(minGrowth)
	}
}

// growth is how much a heap whose collection marked live (and scanned
// stacks and globals besides) may grow before the next.
func (p *pacer) growth(live, stacks, globals uint64) uint64 {
	return max((live+stacks+globals)/100*gcGrowthPercent, uint64(p.least.Load()))
}

// The runtime's metrics the pacer reads, in samples' order.
const (
	mLive = iota
	mStacks
	mGlobals
	mTotal
	mReleased
	mFree
	mObjects
)

func newPacer() *pacer {
	names := []string{
		mLive:     "/gc/heap/live:bytes",
		mStacks:   "/gc/scan/stack:bytes",
		mGlobals:  "/gc/scan/globals:bytes",
		mTotal:    "/memory/classes/total:bytes",
		mReleased: "/memory/classes/heap/released:bytes",
		mFree:     "/memory/classes/heap/free:bytes",
		mObjects:  "/memory/classes/heap/objects:bytes",
	}
	p := &pacer{samples: make([]metrics.Sample, len(names))}
	p.least.Store(coldMinGrowth)
	for i, n := range names {
		p.samples[i].Name = n
	}
	return p
}

// sentinel is an object nothing keeps: its finalizer runs after the first
// collection that begins once it was made. It holds a pointer, so it is not
// packed with other small objects (whose lifetimes would become its own).
type sentinel struct {
	p *pacer
	_ [8]byte
}

// arm makes a sentinel whose finalizer paces and arms the next one.
func (p *pacer) arm() {
	s := &sentinel{p: p}
	runtime.SetFinalizer(s, func(s *sentinel) {
		s.p.pace()
		s.p.arm()
	})
}

// pace sets the memory limit from the last collection's live heap.
func (p *pacer) pace() {
	metrics.Read(p.samples)
	v := func(i int) uint64 {
		if p.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0 // a runtime without the metric: taken as nothing
		}
		return p.samples[i].Value.Uint64()
	}
	live := v(mLive)
	goal := live + p.growth(live, v(mStacks), v(mGlobals))
	held := sub(v(mTotal), v(mReleased))       // what the limit is compared with
	nonHeap := sub(held, v(mFree)+v(mObjects)) // held besides heap objects and free pages
	limit := goal/(100-heapHeadroomPercent)*100 + nonHeap
	if last := uint64(p.limit.Load()); last > 0 {
		limit = max(limit, last-last/8) // a heap that shrank: down an eighth at a time
	}
	if limit > math.MaxInt64 {
		limit = math.MaxInt64
	}
	debug.SetMemoryLimit(int64(limit))
	p.limit.Store(int64(limit))
	if f := p.after.Load(); f != nil {
		(*f)(live)
	}
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

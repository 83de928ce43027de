package main

import (
	"bytes"
	"errors"
	"os"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// What wakes an idle daemon is rare (a look at its buckets every 30 s, a
// heartbeat every few minutes), but on a virtualised node each wake-up of
// a large process costs more the more small pages it has mapped: the
// switch into it pays for its page tables (issue 20's seventh pass,
// `BenchmarkWakeFloor`: 5.6–8.5 ms a wake a second apart for a 317 MiB
// process, 1.4–3.0 ms for a 47 MiB one). The same memory in 2 MiB pages
// costs what an empty process does: 512 times fewer entries.
//
// Go does not ask for huge pages for its heap (it stopped in 1.21.1), and
// a machine that leaves them to `madvise` (a common default) gives it
// none. So once its cold start is answered and the settling collection
// has given the cold start's room back, the daemon asks the kernel to
// collapse its heap into huge pages (madvise MADV_COLLAPSE, Linux 6.1 and
// later: a synchronous copy, ~2.5 ms a MiB here, off the loop), and again
// whenever its live heap has grown by a quarter since (hugeHeap).
//
// Only the dense stretches: a 2 MiB stretch is collapsed when at least
// half of its small pages are resident (denseEnough), since collapsing
// fills its holes too. A settled 100,000-file node's heap is mostly dense
// (75–95 % per stretch) and grew by ~50 MiB so (379 → 431 MiB resident,
// under its cold start's peak), where collapsing every stretch that held
// a page grew it by 160 MiB. Whatever the heap grows into later is in
// small pages again (until it has grown by a quarter); the collector does
// not give the collapsed stretches' memory back (gc.go's pacer leaves the
// scavenger nothing to do below its limit), so they stay whole: a 10,000-
// file node refilled every 10 s kept its 46 MiB of huge pages through
// fifteen refills and their collections. Under the operator's GOGC (no
// pacer) the heap is collapsed once settled, not again.
//
// The machine's own choice is kept: nothing is asked when its transparent
// huge pages are `never` (/sys/kernel/mm/transparent_hugepage/enabled) or
// the operator told Go to keep its heap out of them (GODEBUG=disablethp=1),
// and `--huge-pages=false` turns it off for the daemon alone.

// thpSetting is where Linux says whether transparent huge pages are used.
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// errNoHugePages: the machine's transparent huge pages are off.
var errNoHugePages = errors.New("the machine's transparent huge pages are off (never)")

// errGoNoHugePages: the operator told Go to keep its heap in small pages.
var errGoNoHugePages = errors.New("GODEBUG has disablethp=1")

// errCollapseRefused: the kernel does not collapse this process's memory
// (before Linux 6.1, or huge pages turned off for the process): not asked
// again.
var errCollapseRefused = errors.New("the kernel collapses no memory of this process (MADV_COLLAPSE is Linux 6.1 and later)")

// denseEnough is the share of a 2 MiB stretch's small pages that must be
// resident for it to be collapsed: one half.
const denseEnough = 2

// collapsed is what collapsing the heap did.
type collapsed struct {
	dense, sparse int   // 2 MiB stretches collapsed, and left as they were
	huge          int64 // bytes in huge pages after (AnonHugePages)
	took          time.Duration
}

// hugeHeap collapses the heap into huge pages once the cold start is
// settled, and again after a collection whose live heap has grown by a
// quarter since the last collapse (regrowth): what the heap grew into
// since is in small pages (a node given more modules). A collapse of
// stretches already whole costs next to nothing.
type hugeHeap struct {
	log      zerolog.Logger
	collapse func() (collapsed, error) // collapseHeap; a test's own
	last     atomic.Uint64             // the live heap at the last collapse, or the least since; 0 until settled
	running  atomic.Bool
	refused  atomic.Bool // errCollapseRefused: not asked again
}

// regrowth is the growth of the live heap, over what it was at the last
// collapse, after which the heap is collapsed again: a quarter.
const regrowth = 4

// newHugeHeap is nil when the operator turned huge pages off, the
// machine's setting (read from setting) is never, or GODEBUG says
// disablethp=1, each said in the log.
func newHugeHeap(on bool, setting string, log zerolog.Logger) *hugeHeap {
	if !on {
		return nil
	}
	if b, err := os.ReadFile(setting); err == nil && bytes.Contains(b, []byte("[never]")) {
		log.Info().Err(errNoHugePages).Msg("the heap stays in small pages")
		return nil
	}
	if slices.Contains(strings.Split(os.Getenv("GODEBUG"), ","), "disablethp=1") {
		log.Info().Err(errGoNoHugePages).Msg("the heap stays in small pages")
		return nil
	}
	return &hugeHeap{log: log, collapse: collapseHeap}
}

// settled collapses the heap the first time (afterColdStart, after the
// settling collection, whose live heap it starts from).
func (h *hugeHeap) settled() {
	if h == nil {
		return
	}
	h.running.Store(true)
	h.collapseAt(max(liveHeap(), 1))
}

// collected is the pacer's word after each collection: the live heap it
// marked. A quarter more than at the last collapse, or than the least it
// was since (a heap that shrank gave pages back, and grows into small
// ones), collapses it again, in the background (the pacer's finalizer
// must not wait), one at a time.
func (h *hugeHeap) collected(live uint64) {
	if h == nil {
		return
	}
	last := h.last.Load()
	if last == 0 || h.refused.Load() {
		return
	}
	if live < last {
		h.last.CompareAndSwap(last, live)
		return
	}
	if live < last+last/regrowth || !h.running.CompareAndSwap(false, true) {
		return
	}
	go h.collapseAt(live)
}

// collapseAt collapses the heap, logs what it did, and remembers live
// (the live heap it was asked at).
func (h *hugeHeap) collapseAt(live uint64) {
	defer h.running.Store(false)
	h.last.Store(live)
	c, err := h.collapse()
	if err != nil && c.dense == 0 {
		// Refused: for good. Otherwise (no huge page to be had just now)
		// the next regrowth tries again.
		h.refused.Store(errors.Is(err, errCollapseRefused))
		h.log.Info().Err(err).Msg("the heap stays in small pages")
		return
	}
	ev := h.log.Info().Int("stretches", c.dense).Int("sparse", c.sparse).
		Int64("huge_mib", c.huge>>20).Uint64("live_mib", live>>20).Dur("took", c.took)
	if err != nil {
		ev = ev.AnErr("some_refused", err)
	}
	ev.Msg("the heap is in huge pages")
}

// liveHeap is the live heap the last collection marked.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

package main

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
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
// collapse its heap into huge pages, once (madvise MADV_COLLAPSE, Linux
// 6.1 and later: a synchronous copy, ~2.5 ms a MiB here, off the loop).
//
// Only the dense stretches: a 2 MiB stretch is collapsed when at least
// half of its small pages are resident (denseEnough), since collapsing
// fills its holes too. A settled 100,000-file node's heap is mostly dense
// (75–95 % per stretch) and grew by ~50 MiB so (379 → 431 MiB resident,
// under its cold start's peak), where collapsing every stretch that held
// a page grew it by 160 MiB. Whatever the heap grows into later is in
// small pages again; the collector does not give memory back at rest
// (gc.go's pacer leaves the scavenger nothing to do below its limit), so
// the collapsed stretches stay whole.
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

// denseEnough is the share of a 2 MiB stretch's small pages that must be
// resident for it to be collapsed: one half.
const denseEnough = 2

// collapsed is what collapsing the heap did.
type collapsed struct {
	dense, sparse int   // 2 MiB stretches collapsed, and left as they were
	huge          int64 // bytes in huge pages after (AnonHugePages)
	took          time.Duration
}

// hugePagesAfterColdStart is the step of afterColdStart that collapses the
// heap, logging what it did: nil when the operator turned it off or the
// machine's setting (read from setting) is never, or GODEBUG says
// disablethp=1.
func hugePagesAfterColdStart(on bool, setting string, log zerolog.Logger) func() {
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
	return func() {
		c, err := collapseHeap()
		if err != nil && c.dense == 0 {
			log.Info().Err(err).Msg("the heap stays in small pages")
			return
		}
		ev := log.Info().Int("stretches", c.dense).Int("sparse", c.sparse).
			Int64("huge_mib", c.huge>>20).Dur("took", c.took)
		if err != nil {
			ev = ev.AnErr("some_refused", err)
		}
		ev.Msg("the heap is in huge pages")
	}
}

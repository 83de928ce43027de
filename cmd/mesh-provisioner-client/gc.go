package main

import (
	"os"
	"runtime/debug"
)

// defaultGOGC is the garbage collector's target the daemon runs with when
// the operator sets neither GOGC nor GOMEMLIMIT. Go's default (100) lets
// the heap grow to twice what is live; the daemon's live heap is almost all
// its graph (about 13 KB per file), so that doubled the resident set of a
// node for little gain: at 10,000 files 50 takes the peak from ~235 MiB to
// ~205 MiB, and the collector's share of a cold start stays a few percent.
// It is proportional, so a node with ten times the files is not starved the
// way a fixed memory limit would starve it (the collector would run back to
// back once the live heap passed the limit).
const defaultGOGC = 50

// tuneGC applies defaultGOGC unless the operator chose the collector's
// settings (GOGC or GOMEMLIMIT in the environment), which are kept as set.
func tuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(defaultGOGC)
}

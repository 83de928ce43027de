package main

import "runtime/debug"

// afterColdStart is the daemon's OnSettled (called once its cold start's
// fills are answered): one collection that gives back to the OS what the
// cold start left behind, the heap collapsed into huge pages (huge, nil
// when not: hugepages.go), then one P (oneProcAfterColdStart), in the
// background so that the daemon's loop does not wait on either.
//
// The cold start's transients (every module's requests, encoded needs and
// reports, decoded KV entries) are garbage once it is over, but the
// daemon's pacer (gc.go) collects only when the heap has grown by half
// again, which a settled daemon may not do for hours: until then the
// resident set kept them, and the heap the collector last marked was the
// cold start's, not the daemon's (issue 20). It is one marking of the live
// heap, once (~50 ms at 10,000 files).
func afterColdStart(p *pacer, huge *hugeHeap) func() {
	procs := oneProcAfterColdStart()
	return func() {
		p.settled() // before the collection, whose pacing then takes the settled growth
		go func() {
			debug.FreeOSMemory()
			huge.settled()
			if procs != nil {
				procs()
			}
		}()
	}
}

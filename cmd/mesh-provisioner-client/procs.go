package main

import (
	"os"
	"runtime"
)

// Once its cold start is over, the daemon does one thing at a time: a
// change is a KV message, one pass of the engine on its loop, a fill
// request and a report, each waiting on another process. With more than
// one P the Go scheduler wakes a second thread to look for work at each of
// those steps, and on a small (often virtualised) node those wake-ups were
// a fifth of a change's CPU (issue 20: 0.61 → 0.49 ms per change at 500
// modules, 0.82 → 0.67 ms at 10,000 files, measured side by side). The
// cold start is different: decoding tens of thousands of KV entries,
// rendering and the collector's marking run in parallel there. So the
// daemon starts with every core and keeps one P (GOMAXPROCS=1) once its
// cold start's fills are answered (daemon.Config.OnSettled).
//
// An operator who sets GOMAXPROCS keeps what they set.

// oneProcAfterColdStart is the daemon's OnSettled: nil when the operator
// chose GOMAXPROCS.
func oneProcAfterColdStart() func() {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	return func() { runtime.GOMAXPROCS(1) }
}

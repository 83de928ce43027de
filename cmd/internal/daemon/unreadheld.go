package daemon

import "time"

// firstReadAwaited says whether the first read of a provider's bucket is
// still awaited: its watch is not made yet (one is, at the next batch:
// syncBoundWatches) or made less than firstLookWait ago. The modules
// reading such a bucket are held until then (nodes.HoldUnread), as a cold
// start's first fill waits for each provider bucket's first look
// (firstlooks.go), and for no longer: a watch whose snapshot does not come
// leaves its leaves saying the bucket is being read, never "not written
// yet".
func (d *Daemon) firstReadAwaited(bucket string) bool {
	ws := d.watches[bucket]
	return ws == nil || time.Since(ws.since) < firstLookWait
}

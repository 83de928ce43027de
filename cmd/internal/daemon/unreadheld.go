package daemon

import (
	"slices"
	"time"
)

// holdUnread takes out of touched the modules that read a provider's
// bucket watched since less than firstLookWait and not read yet
// (nodes/boundread.go), and keeps them in d.unreadHeld; it puts back
// those that no longer do (the bucket read, the wait over, the plan
// moved on). A held module is said nothing: no fill, no report, no need,
// so its last report stands (a new module has none yet) until it can say
// what the bucket holds, as a cold start's first fill waits for each
// provider bucket's first look (firstlooks.go). The wait is bounded, as
// there, for a watch whose snapshot does not come: its leaves say the
// bucket is being read, never "not written yet".
func (d *Daemon) holdUnread(touched []string) []string {
	var buckets []string
	for _, b := range d.mesh.UnreadBuckets() {
		// No watch yet: one is made at the next batch (syncBoundWatches).
		if ws := d.watches[b]; ws == nil || time.Since(ws.since) < firstLookWait {
			buckets = append(buckets, b)
		}
	}
	if len(buckets) == 0 && len(d.unreadHeld) == 0 {
		return touched
	}
	reading := d.mesh.ModulesReading(buckets)
	out := touched[:0:0]
	for _, m := range touched {
		if reading[m] {
			d.unreadHeld[m] = true
			continue
		}
		out = append(out, m)
	}
	for m := range d.unreadHeld {
		if reading[m] {
			continue
		}
		delete(d.unreadHeld, m)
		if d.mesh.HasModule(m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

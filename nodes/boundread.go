package nodes

import (
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider's bucket that no plan of the node read until now is watched
// from the batch that wires its first bound leaf (the daemon's
// syncBoundWatches), and what it holds is known only once the watch's
// first snapshot is in. Until then an entry the leaf does not find is not
// "not written yet": nobody knows. The leaf says the bucket is being read
// (unreadWhy), and the daemon holds the reports and needs of the modules
// reading it (HoldUnread) until that first read, as a
// cold start holds its first fill for each provider bucket's first look.
// Said "not written yet" at once, a module whose plan came to read a
// binding written all along was reported waiting and its need put
// waiting, and a moment later applied and met: a false event, a false
// state in the applied and needs buckets, a need's entry time moved
// (SPEC §4.6, §5.2, §5.3).

// unreadWhy is why a bound leaf waits while its bucket was not read yet.
func unreadWhy(bucket, key string) string {
	return bucket + " " + key + ": not read yet (the client's first read of " + bucket + " is under way)"
}

// BucketRead records that a provider's bucket has been read since it was
// watched: its first snapshot is in, or the bus said it does not exist or
// refuses it. Its leaves that find no entry say so from now on. ForgetBound
// (the watch stopped) makes a later watch read anew. The base buckets are
// not provider buckets: nothing to record.
func (m *NodeGraph) BucketRead(bucket string) {
	switch bucket {
	case spec.AssignmentsBucket, spec.RegistryBucket, spec.ConfigBucket:
		return
	}
	if m.boundRead[bucket] {
		return
	}
	m.boundRead[bucket] = true
	for n := range m.boundUse[bucket] {
		if o, ok := n.Meta.(*Origin); ok {
			m.initBound(n, bucket, o.Key)
		}
	}
}

// UnreadBuckets lists the providers' buckets a plan reads that were not
// read yet (BucketRead), sorted.
func (m *NodeGraph) UnreadBuckets() []string {
	var out []string
	for b := range m.boundUse {
		if !m.boundRead[b] {
			out = append(out, b)
		}
	}
	sortStrings(out)
	return out
}

// ModulesReading is the set of this node's modules a template of which
// reads one of buckets (a provider's bucket, through ${bound:…}).
func (m *NodeGraph) ModulesReading(buckets []string) map[string]bool {
	out := map[string]bool{}
	for _, b := range buckets {
		for n := range m.boundUse[b] {
			if o, ok := n.Meta.(*Origin); ok && m.mods[o.Module] != nil {
				out[o.Module] = true
			}
		}
	}
	return out
}

// HoldUnread takes out of touched (sorted module names, the batch's to
// send) the modules that read a provider's bucket not read yet whose first
// read is still awaited (awaited: its watch is young enough, or not made
// yet), and keeps them held; it puts back those that no longer do (the
// bucket read, the wait over, the plan moved on) and are still this
// node's. A held module is said nothing: no fill, no report, no need, so
// its last report stands (a new module has none yet) until it can say
// what the bucket holds. The result is sorted.
func (m *NodeGraph) HoldUnread(touched []string, awaited func(bucket string) bool) []string {
	var buckets []string // in no order: ModulesReading needs none
	for b := range m.boundUse {
		if !m.boundRead[b] && awaited(b) {
			buckets = append(buckets, b)
		}
	}
	fetching := m.archivesAwaited(time.Now())
	if len(buckets) == 0 && len(m.unreadHeld) == 0 && len(fetching) == 0 {
		return touched
	}
	reading := m.ModulesReading(buckets)
	for mod := range fetching { // a plan moved to an archive not here yet (archiveheld.go)
		reading[mod] = true
	}
	out := touched[:0:0]
	for _, mod := range touched {
		if reading[mod] {
			m.unreadHeld[mod] = true
			continue
		}
		out = append(out, mod)
	}
	for mod := range m.unreadHeld {
		if reading[mod] {
			continue
		}
		delete(m.unreadHeld, mod)
		if m.HasModule(mod) && !slices.Contains(out, mod) {
			out = append(out, mod)
		}
	}
	slices.Sort(out)
	return out
}

// UnreadHeld says whether a module is held by HoldUnread: the start is
// not settled, nor the daemon at rest, while one is.
func (m *NodeGraph) UnreadHeld() bool { return len(m.unreadHeld) > 0 }

// HoldsUnread says whether HoldUnread holds module: the output stage then
// sends nothing of it on its own either (stage.Config.Held), until a
// later HoldUnread lets it go (and hands it back in touched).
func (m *NodeGraph) HoldsUnread(module string) bool { return m.unreadHeld[module] }

package bus

import "github.com/nats-io/nats.go/jetstream"

// A stream purge (`nats stream purge`, whole or by subject) takes a
// bucket's values away without a delete marker: no watcher hears of it,
// and the daemon kept filling from values the bus no longer held (a config
// value answered by prov.ask, a plan still filled) until the next
// reconnect. Every key a watch holds had a message in the stream, its
// latest value, so a stream holding fewer messages than the keys the watch
// holds lost some of them: the look the watch already takes at its bucket
// (replaced.go) tells it at no cost, and the watch then reads the bucket
// again, as after a bucket replaced, its snapshot saying which keys are
// gone. A purge of some of the watch's subjects in a bucket shared with
// other filters leaves more messages than it holds, and is not seen.

// purged says whether the stream, as info (the look's stream info) saw it,
// holds fewer messages than the keys the watch holds.
func (f *feed) purged(info *jetstream.StreamInfo) (held int, yes bool) {
	if info == nil {
		return 0, false
	}
	f.mu.Lock()
	held = f.w.known.len()
	f.mu.Unlock()
	return held, info.State.Msgs < uint64(held)
}

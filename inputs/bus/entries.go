package bus

import (
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// entryOf copies what the daemon needs out of a watcher's entry. The key is
// cloned: the client's is a piece of the message's whole subject
// ("$KV.<bucket>.<key>"), which the daemon would otherwise keep alive for
// as long as it knows the key (tens of thousands on a large node).
func entryOf(e jetstream.KeyValueEntry) Entry {
	return Entry{Key: strings.Clone(e.Key()), Value: e.Value(), Revision: e.Revision()}
}

// sortedEntries is the snapshot's state, sorted by key.
func sortedEntries(state map[string]Entry) []Entry {
	out := make([]Entry, 0, len(state))
	for _, e := range state {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out
}

package bus

import (
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
)

// entryOf is what the daemon needs of a watcher's message m, whose subject
// is pre (len(m.Subject) > len(pre)) followed by the key, written at
// revision rev. The key is cloned: it is a piece of the message's whole
// subject ("$KV.<bucket>.<key>"), which the daemon would otherwise keep
// alive for as long as it knows the key (tens of thousands on a large node).
func entryOf(m *nats.Msg, pre string, rev uint64) Entry {
	return Entry{Key: strings.Clone(m.Subject[len(pre):]), Value: m.Data, Revision: rev}
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

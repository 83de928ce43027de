package bus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestARefusedLookForALostConsumerLeavesNoRefusalBehind: a watch's look
// for a lost consumer (lost.go: the newest value under its filter, by a
// direct get) that the bus refuses (a bucket read under rights without
// the get) is heard at once and leaves no refusal behind on the
// connection: before, it waited out its 5 s timeout (the watch answering
// no Resync meanwhile), and the refusal it left was the answer bus.Refused gave a later timeout on the
// bucket's stream, so a watch restarted then (a lookup timing out while
// the stream elects its leader) said its bucket not permitted.
func TestARefusedLookForALostConsumerLeavesNoRefusalBehind(t *testing.T) {
	s, ajs := aceDenied(t, "$JS.API.DIRECT.GET.KV_closed.>", "$JS.API.STREAM.MSG.GET.KV_closed")
	kv := createBucket(t, ajs, "closed")
	put(t, kv, "ace.k", "v")
	var mu sync.Mutex
	var gets []string
	nc := connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop(),
		OnRefused: func(subject string) {
			if strings.Contains(subject, "GET.KV_closed") {
				mu.Lock()
				gets = append(gets, subject)
				mu.Unlock()
			}
		}})
	js := newJS(t, nc)
	w, out := startWatch(t, js, "closed", "ace.>", 50*time.Millisecond, 16) // a look every 300 ms
	if u := nextSnapshot(t, out, 10*time.Second); describe(u) != "snapshot{ace.k=v}" {
		t.Fatalf("first snapshot %s", describe(u))
	}
	put(t, kv, "bob.k", "v") // the stream moves past what the watcher was given: it asks
	bustest.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(gets) == 0 {
			return fmt.Errorf("the watch did not ask for the newest value under its filter")
		}
		return nil
	})
	// A Resync is answered once the watch is back from its look (at once,
	// or after the get's timeout): the refusal was heard by then.
	w.Resync()
	if u := nextSnapshot(t, out, 10*time.Second); describe(u) != "snapshot{ace.k=v}" {
		t.Fatalf("snapshot after a Resync %s", describe(u))
	}
	mu.Lock()
	asked := append([]string(nil), gets...)
	mu.Unlock()
	if Refused(js, fmt.Errorf("bus: looking up bucket closed: %w", context.DeadlineExceeded), "KV_closed") {
		t.Errorf("a later timeout on the bucket's stream is said refused, by the get's refusal (%q) left on the connection", asked)
	}
}

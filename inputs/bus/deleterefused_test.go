package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestARefusedConsumerDeleteLeavesNoRefusalBehind: a watcher stopped (a
// Resync, as after every reconnect) deletes its consumer; a user whose
// rights lack the delete is refused it, and that refusal is the delete's:
// before, no call awaited it, so it was kept for a minute as the answer
// bus.Refused gave the next timeout on the bucket's stream (a lookup
// timing out while the bus that just came back readies JetStream), and
// the bucket was said not permitted.
func TestARefusedConsumerDeleteLeavesNoRefusalBehind(t *testing.T) {
	s, ajs := aceDenied(t, "$JS.API.CONSUMER.DELETE.KV_closed.*", "$JS.API.STREAM.INFO.KV_barrier")
	put(t, createBucket(t, ajs, "closed"), "ace.k", "v")
	var deletes atomic.Int32
	nc := connect(t, Options{URL: s.ClientURL(), User: "ace", Password: "ace", Log: zerolog.Nop(),
		OnRefused: func(subject string) {
			if strings.Contains(subject, ".CONSUMER.DELETE.KV_closed.") {
				deletes.Add(1)
			}
		}})
	js := newJS(t, nc)
	w, out := startWatch(t, js, "closed", ">", time.Hour, 16)
	if u := nextSnapshot(t, out, 10*time.Second); describe(u) != "snapshot{ace.k=v}" {
		t.Fatalf("first snapshot %s", describe(u))
	}
	w.Resync() // the watcher is stopped: its consumer's delete is refused
	if u := nextSnapshot(t, out, 10*time.Second); describe(u) != "snapshot{ace.k=v}" {
		t.Fatalf("snapshot after a Resync %s", describe(u))
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if deletes.Load() == 0 {
			return fmt.Errorf("the consumer's delete was not refused (the test's premise)")
		}
		return nil
	})
	// A refusal heard after the delete's: the connection's handler has
	// dealt with the delete's by then (one goroutine, in order).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := LookupKV(ctx, js, "barrier"); !errors.As(err, new(*RefusedError)) {
		t.Fatalf("the barrier's lookup: %v, want a refusal", err)
	}
	if Refused(js, fmt.Errorf("bus: looking up bucket closed: %w", context.DeadlineExceeded), "KV_closed") {
		t.Error("a later timeout on the bucket's stream is said refused, by the consumer delete's refusal left on the connection")
	}
}

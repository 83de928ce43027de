package bus

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A bucket deleted and made again at once (a repair, a re-provisioning
// script) is not said Missing when it is back by the time the watch looks
// once more: the look that found the stream gone and the lookup after it
// (both answered "stream not found", seen on the bus) are followed by
// further looks for a short while (GoneGrace) before Missing is said, so
// the daemon does not take every key of the bucket away for the moment
// between the delete and the create (a plan's module said gone, its files
// removed, all put back a second later). Before, Missing was said on the
// first lookup that did not find it. No right beyond the watch's own
// (STREAM.INFO on its bucket) is used: SPEC §2.3.
func TestABucketMadeAgainByTheTimeTheWatchLooksOnceMoreIsNotSaidMissing(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	put(t, createBucket(t, js, "assign"), "ace.a", "1")

	var notFound atomic.Int32 // replies "stream not found" to the watch's looks
	mon := bustest.Connect(t, s)
	if _, err := mon.Subscribe("_INBOX.>", func(m *nats.Msg) {
		if strings.Contains(string(m.Data), "stream not found") {
			notFound.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := mon.Flush(); err != nil {
		t.Fatal(err)
	}

	out := make(chan Update, 16)
	w := NewWatch(js, "assign", "ace.>", out, testLog(t))
	w.Recheck = 100 * time.Millisecond
	w.GoneGrace = 10 * time.Second // the default's second, stretched for a loaded CI
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	if u := nextSnapshot(t, out, 5*time.Second); describe(u) != "snapshot{ace.a=1}" {
		t.Fatalf("first snapshot: %s", describe(u))
	}

	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := notFound.Load(); n < 2 {
			return fmt.Errorf("the watch's look and lookup after the delete: %d answered not found", n)
		}
		return nil
	})
	put(t, createBucket(t, js, "assign"), "ace.a", "new")

	deadline := time.Now().Add(15 * time.Second)
	for {
		u := next(t, out, time.Until(deadline))
		if u.Missing {
			t.Fatalf("said Missing though the bucket was made again while the watch still looked: %s", describe(u))
		}
		if u.Snapshot {
			if got := describe(u); got != "snapshot{ace.a=new}" {
				t.Fatalf("the new bucket's snapshot: %s", got)
			}
			return
		}
	}
}

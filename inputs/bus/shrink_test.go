package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Shrink is what a snapshot keeps of each value as it is gathered: the
// snapshot (a first one, and one read again after a Resync) hands over
// Shrink's values, a deleted key is still not state, and a live change is
// handed over as it came.
func TestShrinkIsWhatTheSnapshotKeepsOfEachValueButNotOfALiveChange(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "long value of a")
	put(t, kv, "ace.b", "long value of b")
	put(t, kv, "ace.gone", "long value gone")
	if err := kv.Delete(context.Background(), "ace.gone"); err != nil {
		t.Fatal(err)
	}

	out := make(chan Update, 16)
	w := NewWatch(js, "assign", "ace.>", out, testLog(t))
	w.Shrink = func(key string, value []byte) []byte {
		return []byte(key + ":" + strings.TrimPrefix(string(value), "long value of "))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	if got, want := describe(nextSnapshot(t, out, 15*time.Second)), "snapshot{ace.a=ace.a:a ace.b=ace.b:b}"; got != want {
		t.Fatalf("first snapshot = %s, want %s", got, want)
	}
	put(t, kv, "ace.a", "long value of a2")
	if got, want := describe(next(t, out, 15*time.Second)), "put ace.a=long value of a2"; got != want {
		t.Fatalf("live change = %s, want %s", got, want)
	}
	w.Resync()
	if got, want := describe(nextSnapshot(t, out, 15*time.Second)), "snapshot{ace.a=ace.a:a2 ace.b=ace.b:b}"; got != want {
		t.Fatalf("snapshot read again = %s, want %s", got, want)
	}
}

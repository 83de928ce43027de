package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The same watcher would resume only 10–15 s after a server restart; the
// daemon calls Resync on reconnect and must get a fresh snapshot promptly.
func TestWatchGivesAFreshSnapshotPromptlyAfterAServerRestart(t *testing.T) {
	s := bustest.Start(t)

	var watch atomic.Pointer[Watch]
	var reconnects atomic.Int32
	nc := connect(t, Options{URL: s.ClientURL(), OnReconnect: func() {
		reconnects.Add(1)
		if w := watch.Load(); w != nil {
			w.Resync()
		}
	}})
	js := newJS(t, nc)
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "1")
	w, out := startWatch(t, js, "assign", "ace.>", 0, 16)
	watch.Store(w)
	if got := describe(next(t, out, 5*time.Second)); got != "snapshot{ace.a=1 ace.b=1}" {
		t.Fatalf("snapshot = %s", got)
	}

	bustest.Restart(t, s) // same store, same port
	restarted := time.Now()
	u := nextSnapshot(t, out, 8*time.Second)
	if got, want := describe(u), "snapshot{ace.a=1 ace.b=1}"; got != want {
		t.Fatalf("snapshot after restart = %s, want %s", got, want)
	}
	if reconnects.Load() == 0 {
		t.Fatal("OnReconnect was not called")
	}
	t.Logf("fresh snapshot %s after the restart", time.Since(restarted).Round(time.Millisecond))

	put(t, kv, "ace.a", "2")
	if got := describe(next(t, out, 5*time.Second)); got != "put ace.a=2" {
		t.Fatalf("live after restart: %s", got)
	}
	if err := kv.Delete(t.Context(), "ace.b"); err != nil {
		t.Fatal(err)
	}
	if got := describe(next(t, out, 5*time.Second)); got != "delete ace.b" {
		t.Fatalf("live after restart: %s", got)
	}
}

func TestWatchRunReturnsPromptlyWhenTheBusIsDown(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	out := make(chan Update, 1)
	w := NewWatch(js, "assign", ">", out, testLog(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	if u := next(t, out, 5*time.Second); !u.Snapshot {
		t.Fatalf("first update = %s", describe(u))
	}

	bustest.Stop(s)
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Run still busy a second after its context ended")
	}
}

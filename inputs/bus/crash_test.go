package bus

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The bus server a client is connected to crashes (SIGKILL, not a clean
// shutdown): the client reconnects to another member at once and reads
// every bucket again (Resync). The cluster takes the crashed member for
// online for minutes, its replica's lag growing with the stream's other
// writes, as a member catching up looks: each watch read again waited its
// 30 s for it, holding every change meanwhile (an outside audit: 36–43 s).
// The server crashed leads neither the stream nor the cluster's
// JetStream: a leader's crash costs an election of nats-server's first
// (seconds), which is no wait of ours. Read within 20 s (the 30 s wait
// it replaces fails it), not at once: for about 3 s nats-server takes the
// crashed member for caught up and may place the watch's consumer on it,
// which never answers: the consumer is made again after 250 ms, then 0.5,
// 1, 2 s (feed.makeConsumer; 0.02–3.8 s seen, against up to 6 s when
// nats.go's 5 s request timeout and the watch's backoff were waited out).
func TestAChangeAfterTheClientsServerCrashesIsReadWithinSeconds(t *testing.T) {
	c := bustest.StartProcessCluster(t, 3)
	// Other nodes, and the controller: they make the bucket and write on
	// through a connection of their own, and the crashed member's lag
	// grows with their writes.
	others, ojs := c.Connect(t)
	kv := c.KV(t, ojs, "assign")
	bustest.PutEventually(t, kv, "ace.m", []byte("old"))
	ctx, stop := context.WithCancel(context.Background())
	written := make(chan struct{})
	go func() {
		defer close(written)
		for i := 0; ctx.Err() == nil; i++ {
			_ = others.Publish(fmt.Sprintf("$KV.assign.n%d.x", i%50), []byte("x"))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-written })

	// The client, on a member that leads nothing; it learns the others
	// from it.
	victim := c.Bystander(t, ojs, "KV_assign")
	var watch atomic.Pointer[Watch]
	nc := connect(t, Options{URL: c.URL(victim), OnReconnect: func() {
		if w := watch.Load(); w != nil {
			w.Resync()
		}
	}})
	c.AwaitKnown(t, nc)
	js := newJS(t, nc)
	w, out := startWatch(t, js, "assign", "ace.>", 0, 64)
	watch.Store(w)
	if got := describe(nextSnapshot(t, out, 30*time.Second)); got != "snapshot{ace.m=old}" {
		t.Fatalf("the first snapshot is %s", got)
	}

	c.Kill(t, victim)
	killed := time.Now()
	bustest.Eventually(t, 10*time.Second, func() error {
		if s := nc.ConnectedServerName(); s == "" || s == c.Names[victim] {
			return fmt.Errorf("not reconnected to another member yet (%q)", s)
		}
		return nil
	})
	bustest.PutEventually(t, kv, "ace.m", []byte("new"))
	m := mirror{}
	for m.String() != "ace.m=new" {
		select {
		case u := <-out:
			m.apply(u)
		case <-time.After(time.Until(killed.Add(20 * time.Second))):
			t.Fatalf("%v after %s (the client's server) crashed, the watch holds %q", time.Since(killed).Round(time.Millisecond), c.Names[victim], m)
		}
	}
	t.Logf("the change read %v after %s crashed", time.Since(killed).Round(time.Millisecond), c.Names[victim])
}

// The client's server crashes, misses a change and many of other nodes'
// writes, and is started again: it accepts connections where the client
// was connected to it, and serves the bucket as it was while it catches
// up. Watches started then must wait for it: a crashed member is not
// waited for only while it refuses connections.
func TestAWatchAfterTheClientsServerCrashedAndCameBackSnapshotsWhatTheBucketHolds(t *testing.T) {
	c := bustest.StartProcessCluster(t, 3)
	_, ajs := c.Connect(t)
	kv := c.KV(t, ajs, "assign")
	const modules = 20
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("old"))
	}
	victim := c.Bystander(t, ajs, "KV_assign")
	nc := connect(t, Options{URL: c.URL(victim)})
	c.AwaitKnown(t, nc)
	js := newJS(t, nc)

	c.Kill(t, victim)
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("new"))
	}
	bustest.PutOthers(t, ajs, "assign", 20000)
	c.StartAgain(t, victim)

	want := "snapshot{"
	for _, m := range []int{0, 1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 2, 3, 4, 5, 6, 7, 8, 9} { // sorted by key
		want += fmt.Sprintf("ace.m%d=new ", m)
	}
	want = want[:len(want)-1] + "}"
	for try := range 30 {
		out := make(chan Update, 1)
		w := NewWatch(js, "assign", "ace.>", out, testLog(t))
		wctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); w.Run(wctx) }()
		u := next(t, out, 30*time.Second)
		cancel()
		<-done
		if got := describe(u); got != want {
			t.Fatalf("try %d: the first update is %s, want %s", try, got, want)
		}
	}
}

package bus

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Puts keep coming while the watch is made to Resync again and again: what
// a reader sees is each snapshot, then exactly the puts written after it, in
// order, none lost or repeated, and nothing of the stopped watcher after the
// next snapshot. Every write is a put under the filter, so the bucket's
// revisions run 1, 2, 3…: a snapshot reaches some revision r (its newest
// entry's) and the live updates after it must be r+1, r+2, … until the next
// snapshot, which may not go back. The bucket keeps every value of the test
// (History 64, 400 puts over 7 keys): with History 1, as the server makes
// them, a value the watcher has not reached when the key is written again
// is gone from the bucket, and rightly skipped.
func TestWatchLiveUpdatesAcrossResyncsAreEachPutOnceInOrder(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "assign", History: 64})
	if err != nil {
		t.Fatal(err)
	}
	put(t, kv, "ace.k0", "0")

	w, out := startWatch(t, js, "assign", "ace.>", 0, 16)
	const puts = 400
	written := make(chan error, 1)
	go func() {
		for i := 1; i <= puts; i++ {
			if _, err := kv.PutString(context.Background(), "ace.k"+strconv.Itoa(i%7), strconv.Itoa(i)); err != nil {
				written <- err
				return
			}
			if i%25 == 0 {
				w.Resync()
			}
		}
		written <- nil
	}()

	m := mirror{}
	var next uint64 // the revision the next live update must have
	snapshots, live, liveAfterResync := 0, 0, 0
	var hist []string // the last updates seen, for a failure to show
	defer func() {
		if t.Failed() {
			t.Logf("the last updates: %v", hist)
		}
	}()
	deadline := time.After(30 * time.Second)
	for next != puts+2 { // revision 1 is ace.k0=0, the puts are 2…puts+1
		var u Update
		select {
		case u = <-out:
		case err := <-written:
			if err != nil {
				t.Fatal(err)
			}
			written = nil
			continue
		case <-deadline:
			t.Fatalf("after %d snapshots and %d live updates, revision %d still not seen (puts: %d)", snapshots, live, next, puts+1)
		}
		m.apply(u)
		var r uint64 // the newest revision u holds
		for _, e := range u.Entries {
			r = max(r, e.Revision)
		}
		if hist = append(hist, fmt.Sprintf("%s@%d", describe(u), r)); len(hist) > 12 {
			hist = hist[1:]
		}
		switch {
		case u.Snapshot:
			if r+1 < next {
				t.Fatalf("snapshot %d reaches revision %d, behind the live update %d delivered before it", snapshots+1, r, next-1)
			}
			snapshots++
			next = r + 1
		case len(u.Entries) != 1 || u.Deleted || u.Missing:
			t.Fatalf("unexpected update %s", describe(u))
		case u.Entries[0].Revision != next:
			t.Fatalf("after %d snapshots, live update %s has revision %d, want %d", snapshots, describe(u), u.Entries[0].Revision, next)
		default:
			live++
			if snapshots >= 2 {
				liveAfterResync++
			}
			next++
		}
	}
	// Resyncs asked while one runs are one (the puts may outrun them on a
	// fast machine): what must have happened is a Resync's snapshot with
	// live updates after it.
	if snapshots < 2 || liveAfterResync == 0 {
		t.Fatalf("%d snapshots and %d live updates (%d after a Resync): the test did not exercise live updates across Resyncs", snapshots, live, liveAfterResync)
	}
	want := mirror{}
	for i := puts - 6; i <= puts; i++ {
		want["ace.k"+strconv.Itoa(i%7)] = strconv.Itoa(i)
	}
	if m.String() != want.String() {
		t.Fatalf("the reader holds %s, want %s", m, want)
	}
	t.Logf("%d snapshots, %d live updates", snapshots, live)
	// A Resync asked after the last put may still answer: with the same state.
	for end := time.After(300 * time.Millisecond); ; {
		select {
		case u := <-out:
			if m.apply(u); !u.Snapshot || m.String() != want.String() {
				t.Fatalf("after the last put: %s", describe(u))
			}
		case <-end:
			return
		}
	}
}

// Puts and deletes keep coming while the watch is made to Resync again and
// again, its reader slow: a reader that never clears its state, dropping
// only what an update says is gone (as the daemon does), ends with the
// bucket's state. An update cut short by a Resync must not count as told.
func TestWatchReaderThatOnlyDropsWhatIsGoneEndsWithTheBucketAcrossResyncs(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")

	w, out := startWatch(t, js, "assign", "ace.>", 0, 0)
	const ops = 300
	want := mirror{}
	written := make(chan error, 1)
	go func() {
		for i := 1; i <= ops; i++ {
			k := "ace.k" + strconv.Itoa(i%5)
			var err error
			if i%3 == 0 {
				err = kv.Delete(context.Background(), k)
				delete(want, k)
			} else {
				_, err = kv.PutString(context.Background(), k, strconv.Itoa(i))
				want[k] = strconv.Itoa(i)
			}
			if err != nil {
				written <- err
				return
			}
			if i%7 == 0 {
				w.Resync()
			}
		}
		written <- nil
	}()

	m := goneMirror{}
	for done := false; !done; {
		select {
		case u := <-out:
			m.apply(u)
			time.Sleep(100 * time.Microsecond) // a reader slower than the bus
		case err := <-written:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		case <-time.After(30 * time.Second):
			t.Fatal("the puts and deletes took over 30 s")
		}
	}
	for deadline := time.After(5 * time.Second); m.String() != want.String(); {
		select {
		case u := <-out:
			m.apply(u)
		case <-deadline:
			t.Fatalf("the reader holds %s, the bucket %s", m, want)
		}
	}
}

// A watch's consumer is told the bus is there every Heartbeat, not
// nats.go's 5 s: the consumer the bus holds for it says so.
func TestAWatchsConsumerHeartbeatIsHeartbeat(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.k0", "0")
	_, out := startWatch(t, js, "assign", "ace.>", 0, 16)
	nextSnapshot(t, out, 10*time.Second)
	stream, err := js.Stream(context.Background(), "KV_assign")
	if err != nil {
		t.Fatal(err)
	}
	var beats []time.Duration
	for ci := range stream.ListConsumers(context.Background()).Info() {
		beats = append(beats, ci.Config.IdleHeartbeat)
	}
	if len(beats) != 1 || beats[0] != Heartbeat {
		t.Fatalf("the watch's consumers beat every %v, want one every %v", beats, Heartbeat)
	}
}

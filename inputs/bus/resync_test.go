package bus

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Puts keep coming while the watch is made to Resync again and again: what
// a reader sees is each snapshot, then exactly the puts written after it, in
// order, none lost or repeated, and nothing of the stopped watcher after the
// next snapshot. Every write is a put under the filter, so the bucket's
// revisions run 1, 2, 3…: a snapshot reaches some revision r (its newest
// entry's) and the live updates after it must be r+1, r+2, … until the next
// snapshot, which may not go back.
func TestWatchLiveUpdatesAcrossResyncsAreEachPutOnceInOrder(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
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
	snapshots, live := 0, 0
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
		switch {
		case u.Snapshot:
			var r uint64
			for _, e := range u.Entries {
				r = max(r, e.Revision)
			}
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
			next++
		}
	}
	if snapshots < 4 || live == 0 {
		t.Fatalf("%d snapshots and %d live updates: the test did not exercise live updates across Resyncs", snapshots, live)
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

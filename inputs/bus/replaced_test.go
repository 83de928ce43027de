package bus

import (
	"testing"
	"time"
)

// A deleted bucket is noticed by looking at its stream every Recheck, not
// by the watcher's heartbeats (10–20 s): Missing comes within a Recheck or
// so, and the bucket made again is followed from its first value.
func TestWatchSaysMissingWhenTheBucketIsDeletedThenSnapshotsTheNewOne(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "1")
	_, out := startWatch(t, js, "assign", "ace.>", 100*time.Millisecond, 16)
	if got := describe(next(t, out, 5*time.Second)); got != "snapshot{ace.a=1 ace.b=1}" {
		t.Fatalf("snapshot = %s", got)
	}

	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	u := next(t, out, 3*time.Second)
	if !u.Missing || len(u.Gone) != 2 {
		t.Fatalf("after the bucket was deleted: %s (gone %v), want missing with ace.a and ace.b gone", describe(u), u.Gone)
	}
	quiet(t, out, 400*time.Millisecond) // said once, while it stays away

	kv = createBucket(t, js, "assign")
	put(t, kv, "ace.c", "2")
	m := mirror{}
	for m.String() != "ace.c=2" {
		m.apply(next(t, out, 3*time.Second))
	}
}

// Deleted and made again between two looks: the new bucket (its sequence
// starting over at 1, below what the old watcher had seen) is followed, and
// the old bucket's keys are said gone.
func TestWatchFollowsABucketDeletedAndMadeAgainAtOnce(t *testing.T) {
	s := runServer(t, t.TempDir(), -1)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.a", "2")
	put(t, kv, "ace.b", "1")
	_, out := startWatch(t, js, "assign", "ace.>", 100*time.Millisecond, 16)
	m := goneMirror{}
	u := next(t, out, 5*time.Second)
	if got := describe(u); got != "snapshot{ace.a=2 ace.b=1}" {
		t.Fatalf("snapshot = %s", got)
	}
	m.apply(u)

	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	kv = createBucket(t, js, "assign")
	put(t, kv, "ace.a", "new")
	deadline := time.Now().Add(3 * time.Second)
	for m.String() != "ace.a=new" {
		m.apply(next(t, out, time.Until(deadline)))
	}
	put(t, kv, "ace.d", "live")
	if got := describe(next(t, out, 3*time.Second)); got != "put ace.d=live" {
		t.Fatalf("live in the new bucket: %s", got)
	}
}

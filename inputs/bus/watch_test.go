package bus

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

func TestWatchDeliversExistingKeysUnderItsFilterAsOneSnapshot(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	revA := put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "2")
	put(t, kv, "bob.c", "3")    // another filter
	put(t, kv, "ace.gone", "x") // deleted: not state
	if err := kv.Delete(context.Background(), "ace.gone"); err != nil {
		t.Fatal(err)
	}

	_, out := startWatch(t, js, "assign", "ace.>", 0, 0)
	u := next(t, out, 5*time.Second)
	if got, want := describe(u), "snapshot{ace.a=1 ace.b=2}"; got != want {
		t.Fatalf("first update = %s, want %s", got, want)
	}
	if u.Bucket != "assign" || u.Filter != "ace.>" {
		t.Errorf("update names bucket %q filter %q, want assign ace.>", u.Bucket, u.Filter)
	}
	if u.Entries[0].Revision != revA {
		t.Errorf("ace.a revision = %d, want %d", u.Entries[0].Revision, revA)
	}
	quiet(t, out, 200*time.Millisecond)
}

func TestWatchDeliversLivePutsAndDeletesOneByOne(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")

	_, out := startWatch(t, js, "assign", "ace.>", 0, 0)
	if got := describe(next(t, out, 5*time.Second)); got != "snapshot{ace.a=1}" {
		t.Fatalf("snapshot = %s", got)
	}

	rev := put(t, kv, "ace.a", "2")
	u := next(t, out, 5*time.Second)
	if got := describe(u); got != "put ace.a=2" || u.Snapshot || u.Deleted {
		t.Fatalf("after put: %s (snapshot %v deleted %v)", got, u.Snapshot, u.Deleted)
	}
	if u.Entries[0].Revision != rev {
		t.Errorf("revision = %d, want %d", u.Entries[0].Revision, rev)
	}

	put(t, kv, "bob.x", "other node") // not under the filter
	if err := kv.Delete(context.Background(), "ace.a"); err != nil {
		t.Fatal(err)
	}
	if got := describe(next(t, out, 5*time.Second)); got != "delete ace.a" {
		t.Fatalf("after delete: %s", got)
	}

	put(t, kv, "ace.b", "3")
	if got := describe(next(t, out, 5*time.Second)); got != "put ace.b=3" {
		t.Fatalf("after put: %s", got)
	}
	if err := kv.Purge(context.Background(), "ace.b"); err != nil {
		t.Fatal(err)
	}
	if got := describe(next(t, out, 5*time.Second)); got != "delete ace.b" {
		t.Fatalf("after purge: %s", got)
	}
	quiet(t, out, 200*time.Millisecond)
}

func TestWatchSaysMissingOnceThenSnapshotsTheBucketOnceCreated(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))

	_, out := startWatch(t, js, "later", ">", 100*time.Millisecond, 0)
	u := next(t, out, 5*time.Second)
	if !u.Missing || len(u.Entries) != 0 || u.Bucket != "later" {
		t.Fatalf("first update = %s (bucket %q), want missing", describe(u), u.Bucket)
	}
	quiet(t, out, 400*time.Millisecond) // several rechecks, no repeated Missing

	kv := createBucket(t, js, "later")
	put(t, kv, "k", "v")
	u = next(t, out, 5*time.Second)
	if !u.Snapshot {
		t.Fatalf("after creation: %s, want a snapshot", describe(u))
	}
	m := mirror{}
	m.apply(u)
	for m.String() != "k=v" {
		m.apply(next(t, out, 5*time.Second))
	}
}

func TestWatchResyncDeliversAFreshSnapshot(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "1")

	w, out := startWatch(t, js, "assign", "ace.>", 0, 16)
	if got := describe(next(t, out, 5*time.Second)); got != "snapshot{ace.a=1 ace.b=1}" {
		t.Fatalf("snapshot = %s", got)
	}
	put(t, kv, "ace.c", "2")
	if err := kv.Delete(context.Background(), "ace.a"); err != nil {
		t.Fatal(err)
	}
	w.Resync()
	if got, want := describe(nextSnapshot(t, out, 5*time.Second)), "snapshot{ace.b=1 ace.c=2}"; got != want {
		t.Fatalf("after Resync: %s, want %s", got, want)
	}
	put(t, kv, "ace.d", "3")
	if got := describe(next(t, out, 5*time.Second)); got != "put ace.d=3" {
		t.Fatalf("live after Resync: %s", got)
	}
}

func TestWatchResyncOfAMissingBucketSaysMissingAgain(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))

	w, out := startWatch(t, js, "nothere", ">", time.Hour, 0)
	if u := next(t, out, 5*time.Second); !u.Missing {
		t.Fatalf("first update = %s, want missing", describe(u))
	}
	w.Resync()
	if u := next(t, out, 5*time.Second); !u.Missing {
		t.Fatalf("after Resync: %s, want missing", describe(u))
	}
}

func TestWatchReachesTheSnapshotOf5000Keys(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	createBucket(t, js, "big")
	const n, batch = 5000, 500 // batches stay under the async publish limit
	for i := range n {
		if _, err := js.PublishAsync(keySubject("big", i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if (i+1)%batch == 0 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(10 * time.Second):
				t.Fatal("puts not acknowledged")
			}
		}
	}

	_, out := startWatch(t, js, "big", "ace.>", 0, 0)
	u := next(t, out, 30*time.Second)
	if !u.Snapshot || len(u.Entries) != n {
		t.Fatalf("got snapshot=%v with %d entries, want %d", u.Snapshot, len(u.Entries), n)
	}
	seen := make(map[string]bool, n)
	for _, e := range u.Entries {
		seen[e.Key+"="+string(e.Value)] = true
	}
	for i := range n {
		if k := "ace.k" + strconv.Itoa(i) + "=" + strconv.Itoa(i); !seen[k] {
			t.Fatalf("snapshot lacks %s", k)
		}
	}
}

func TestWatchRunReturnsWhenContextEndsWhileBlockedOnSend(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")

	w := NewWatch(js, "assign", ">", make(chan Update), testLog(t)) // nobody reads
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	time.Sleep(200 * time.Millisecond) // let it reach the blocked send
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run still blocked after its context ended")
	}
}

func TestWaitBucketReturnsTheBucketOnceCreated(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))

	got := make(chan error, 1)
	go func() {
		kv, err := WaitBucket(context.Background(), js, "soon", 50*time.Millisecond)
		if err == nil && kv.Bucket() != "soon" {
			err = fmt.Errorf("got bucket %q", kv.Bucket())
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("WaitBucket returned before the bucket existed: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	createBucket(t, js, "soon")
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitBucket did not return after the bucket was created")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := WaitBucket(ctx, js, "never", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("WaitBucket on a bucket never created: err = %v, want one naming the bucket", err)
	}
}

func TestWatchSnapshotsSayWhichKnownKeysAreGone(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "1")
	put(t, kv, "ace.c", "1")

	w, out := startWatch(t, js, "assign", "ace.>", 0, 16)
	m := goneMirror{}
	if u := next(t, out, 5*time.Second); !u.Snapshot || len(u.Gone) != 0 {
		t.Fatalf("first snapshot = %s, gone %v", describe(u), u.Gone)
	} else {
		m.apply(u)
	}
	for _, k := range []string{"ace.a", "ace.c"} {
		if err := kv.Delete(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	put(t, kv, "ace.d", "2")
	w.Resync()
	// Each delete comes live or, if the Resync cut in first, in Gone: a
	// reader that never clears its state ends with the bucket's.
	for {
		u := next(t, out, 5*time.Second)
		m.apply(u)
		if u.Snapshot {
			break
		}
	}
	if got, want := m.String(), "ace.b=1 ace.d=2"; got != want {
		t.Fatalf("after Resync the reader holds %s, want %s", got, want)
	}
}

func TestForgetReturnsEveryKnownKeyOnce(t *testing.T) {
	keys := []string{"a", "b", "c"}
	w := &Watch{known: newKeySet(len(keys), func(i int) string { return keys[i] })}
	w.known.add("d")
	w.known.delete("b")
	if got := w.forget(); !slices.Equal(got, []string{"a", "c", "d"}) {
		t.Fatalf("gone = %v, want [a c d]", got)
	}
	if got := w.forget(); len(got) != 0 {
		t.Fatalf("gone twice = %v", got)
	}
}

// goneMirror is a reader that drops only what an update says is gone.
type goneMirror map[string]string

func (m goneMirror) apply(u Update) {
	for _, k := range u.Gone {
		delete(m, k)
	}
	if !u.Snapshot && !u.Missing {
		mirror(m).apply(u)
		return
	}
	for _, e := range u.Entries {
		m[e.Key] = string(e.Value)
	}
}

func (m goneMirror) String() string { return mirror(m).String() }

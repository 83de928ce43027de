package bus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// With KeepWhileUnread a bucket deleted says Missing naming no key gone,
// and the snapshot read once it is made again names those it no longer
// holds: a bucket deleted by mistake takes nothing away meanwhile.
func TestKeepWhileUnreadSaysWhatWentOnlyOnceTheBucketIsReadAgain(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	put(t, kv, "ace.b", "2")

	out := make(chan Update, 16)
	w := NewWatch(js, "assign", "ace.>", out, testLog(t))
	// A Recheck long beside the test's create and put: the bucket made
	// again is read once it holds ace.a.
	w.Recheck, w.KeepWhileUnread = time.Second, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if u := nextSnapshot(t, out, 5*time.Second); len(u.Entries) != 2 {
		t.Fatalf("first snapshot %+v", u)
	}

	if err := js.DeleteKeyValue(ctx, "assign"); err != nil {
		t.Fatal(err)
	}
	for {
		u := next(t, out, 15*time.Second)
		if u.Missing {
			if len(u.Gone) != 0 {
				t.Fatalf("Missing names %v gone", u.Gone)
			}
			break
		}
		if len(u.Gone) != 0 {
			t.Fatalf("an update before Missing names %v gone", u.Gone)
		}
	}

	kv = createBucket(t, js, "assign")
	put(t, kv, "ace.a", "1")
	u := nextSnapshot(t, out, 15*time.Second)
	if !slices.Equal(u.Gone, []string{"ace.b"}) {
		t.Errorf("the snapshot after names %v gone, want [ace.b]", u.Gone)
	}
}

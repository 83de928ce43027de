package bus

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// followed is a watch of bucket "assign" (ace.>, Recheck 100 ms) once it has
// delivered its first snapshot: ace.a written with each of values in turn,
// ace.b=1.
func followed(t *testing.T, values ...string) (jetstream.JetStream, chan Update, Update) {
	t.Helper()
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	for _, v := range values {
		put(t, kv, "ace.a", v)
	}
	put(t, kv, "ace.b", "1")
	_, out := startWatch(t, js, "assign", "ace.>", 100*time.Millisecond, 16)
	u := next(t, out, 5*time.Second)
	if want := "snapshot{ace.a=" + values[len(values)-1] + " ace.b=1}"; describe(u) != want {
		t.Fatalf("snapshot = %s, want %s", describe(u), want)
	}
	return js, out, u
}

// A deleted bucket is noticed by looking at its stream every Recheck, not
// by the watcher's heartbeats (10–20 s): Missing comes within replacedChecks Rechecks or
// so, and the bucket made again is followed from its first value.
func TestWatchSaysMissingWhenTheBucketIsDeletedThenSnapshotsTheNewOne(t *testing.T) {
	js, out, _ := followed(t, "1", "1")

	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	u := next(t, out, 3*time.Second)
	if !u.Missing || len(u.Gone) != 2 {
		t.Fatalf("after the bucket was deleted: %s (gone %v), want missing with ace.a and ace.b gone", describe(u), u.Gone)
	}
	quiet(t, out, 400*time.Millisecond) // said once, while it stays away

	kv := createBucket(t, js, "assign")
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
	js, out, first := followed(t, "1", "2") // ace.a twice: the old bucket's sequence past the new one's
	m := goneMirror{}
	m.apply(first)

	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	kv := createBucket(t, js, "assign")
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

// A live watch looks whether its bucket was replaced every replacedChecks
// Rechecks, not every Recheck, and every watch at the same instants: two
// watches started a quarter of a second apart, their STREAM.INFO requests
// counted on the bus over 2.4 s of a 100 ms Recheck, look a few times (not
// once per Recheck) and in pairs.
func TestLiveWatchesLookAtTheirBucketsRarelyAndTogether(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	for _, b := range []string{"assign", "other"} {
		put(t, createBucket(t, js, b), "ace.a", "1")
	}
	type request struct {
		at     time.Time
		stream string
	}
	requests := make(chan request, 1000)
	mon := bustest.Connect(t, s)
	if _, err := mon.Subscribe("$JS.API.STREAM.INFO.*", func(m *nats.Msg) {
		requests <- request{time.Now(), strings.TrimPrefix(m.Subject, "$JS.API.STREAM.INFO.")}
	}); err != nil {
		t.Fatal(err)
	}
	if err := mon.Flush(); err != nil {
		t.Fatal(err)
	}
	_, a := startWatch(t, js, "assign", "ace.>", 100*time.Millisecond, 16)
	nextSnapshot(t, a, 5*time.Second)
	time.Sleep(250 * time.Millisecond) // started apart, looking together
	_, o := startWatch(t, js, "other", "ace.>", 100*time.Millisecond, 16)
	nextSnapshot(t, o, 5*time.Second)
	for len(requests) > 0 { // the lookups before each watcher
		<-requests
	}

	// A look is judged only well inside the window: one at either edge
	// may have its partner just outside it (drained before, or not in yet).
	from := time.Now().Add(100 * time.Millisecond)
	time.Sleep(2400 * time.Millisecond) // 24 Rechecks: 4 looks, give or take one
	to := time.Now().Add(-100 * time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the partners of the last looks come in
	var got []request
	for len(requests) > 0 {
		got = append(got, <-requests)
	}
	n := map[string]int{}
	for _, r := range got {
		n[r.stream]++
	}
	for _, st := range []string{"KV_assign", "KV_other"} {
		if n[st] < 2 || n[st] > 6 {
			t.Errorf("%s was looked at %d times in 24 Rechecks, want about 4 (one per %d Rechecks)", st, n[st], replacedChecks)
		}
	}
	for _, r := range got {
		if r.at.Before(from) || r.at.After(to) {
			continue
		}
		together := false
		for _, q := range got {
			if q.stream != r.stream && q.at.Sub(r.at).Abs() < 100*time.Millisecond {
				together = true
			}
		}
		if !together {
			t.Errorf("%s was looked at alone at %s: want every watch's look at the same instants", r.stream, r.at.Format("15:04:05.000"))
		}
	}
}

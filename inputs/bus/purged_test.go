package bus

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream purge leaves no delete marker: the watch used to keep the purged
// values until the next reconnect. Its look at the bucket sees fewer
// messages than keys held, and a new snapshot says the purged keys gone.
func TestAStreamPurgeIsSeenAndItsKeysSaidGone(t *testing.T) {
	js, out, _ := followed(t, "1")

	st, err := js.Stream(t.Context(), "KV_assign")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	u := nextSnapshot(t, out, 5*time.Second)
	if len(u.Entries) != 0 || !slices.Equal(u.Gone, []string{"ace.a", "ace.b"}) {
		t.Fatalf("after the purge: %s, gone %v; want an empty snapshot with ace.a and ace.b gone", describe(u), u.Gone)
	}
	kv, err := js.KeyValue(t.Context(), "assign")
	if err != nil {
		t.Fatal(err)
	}
	put(t, kv, "ace.c", "3")
	if got := describe(next(t, out, 3*time.Second)); got != "put ace.c=3" {
		t.Fatalf("after the purge, live: %s", got)
	}
}

// Purged by subject, the watch's keys alone: the same.
func TestAPurgeOfTheWatchedSubjectsIsSeen(t *testing.T) {
	js, out, _ := followed(t, "1")
	st, err := js.Stream(t.Context(), "KV_assign")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(t.Context(), jetstream.WithPurgeSubject("$KV.assign.ace.a")); err != nil {
		t.Fatal(err)
	}
	u := nextSnapshot(t, out, 5*time.Second)
	if describe(u) != "snapshot{ace.b=1}" || !slices.Equal(u.Gone, []string{"ace.a"}) {
		t.Fatalf("after the purge: %s, gone %v; want ace.b alone, ace.a gone", describe(u), u.Gone)
	}
}

// Keys deleted and purged the KV's way leave markers, which the watcher
// hears: the look finds as many messages as keys (markers included) and
// starts no new snapshot.
func TestKVDeletesStartNoNewSnapshot(t *testing.T) {
	js, out, _ := followed(t, "1")
	kv, err := js.KeyValue(t.Context(), "assign")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(t.Context(), "ace.a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(t.Context(), "ace.b"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"delete ace.a", "delete ace.b"} {
		if got := describe(next(t, out, 3*time.Second)); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	quiet(t, out, 1500*time.Millisecond) // two looks: nothing more
}

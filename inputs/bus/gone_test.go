package bus

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// wantGone is the keys a reader holds (what the updates said exist) that
// are not in u's state, sorted: exactly what u.Gone must name.
func wantGone(held mirror, u Update) []string {
	in := map[string]bool{}
	for _, e := range u.Entries {
		in[e.Key] = true
	}
	var gone []string
	for k := range held {
		if !in[k] {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	return gone
}

// Keys put and deleted live, some read and some cut short by a Resync,
// across the merges of what the watch keeps: each snapshot's Gone names
// exactly the keys the reader was told exist and the snapshot lacks, and
// the bucket's deletion names all of them.
func TestWatchGoneNamesExactlyTheKnownKeysNotInTheNewState(t *testing.T) {
	s := bustest.Start(t)
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	kv := createBucket(t, js, "assign")
	bucket := map[string]string{}
	for i := range 200 {
		k := fmt.Sprintf("ace.k%03d", i)
		put(t, kv, k, "0")
		bucket[k] = "0"
	}
	w, out := startWatch(t, js, "assign", "ace.>", 100*time.Millisecond, 4)
	held := mirror{}
	check := func(u Update) {
		t.Helper()
		if u.Snapshot || u.Missing {
			if want := wantGone(held, u); !slices.Equal(u.Gone, want) {
				t.Fatalf("snapshot %v, missing %v: gone %q, want %q", u.Snapshot, u.Missing, u.Gone, want)
			}
		}
		held.apply(u)
	}
	check(next(t, out, 5*time.Second))

	r := rand.New(rand.NewPCG(20, 20))
	change := func(n int) {
		for range n {
			k := fmt.Sprintf("ace.%c%03d", "kn"[r.IntN(2)], r.IntN(250))
			if r.IntN(3) == 0 {
				if err := kv.Delete(context.Background(), k); err != nil {
					t.Fatal(err)
				}
				delete(bucket, k)
			} else {
				v := fmt.Sprint(r.IntN(1000))
				put(t, kv, k, v)
				bucket[k] = v
			}
		}
	}
	settle := func() {
		t.Helper()
		for deadline := time.After(10 * time.Second); held.String() != mirror(bucket).String(); {
			select {
			case u := <-out:
				check(u)
			case <-deadline:
				t.Fatalf("the reader holds %s, the bucket %s", held, mirror(bucket))
			}
		}
	}
	for range 4 {
		change(80) // read as they come: known follows them live
		settle()
		change(80) // mostly unread when the Resync stops the watcher
		w.Resync()
		for {
			u := next(t, out, 10*time.Second)
			check(u)
			if u.Snapshot {
				break
			}
		}
		settle()
	}
	if err := js.DeleteKeyValue(t.Context(), "assign"); err != nil {
		t.Fatal(err)
	}
	for {
		u := next(t, out, 5*time.Second)
		check(u)
		if u.Missing {
			break
		}
	}
	if len(held) != 0 {
		t.Fatalf("after missing the reader holds %s", held)
	}
}

package bus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkKeySet says how s differs from want, the keys it should hold.
func checkKeySet(t *testing.T, s *keySet, want map[string]bool, universe []string, step string) {
	t.Helper()
	for _, k := range universe {
		if s.has(k) != want[k] {
			t.Fatalf("%s: has(%q) = %v, want %v", step, k, s.has(k), want[k])
		}
	}
	// gone against a state holding every other key of the universe.
	now := map[string]Entry{}
	var wantGone []string
	for i, k := range universe {
		if i%2 == 0 {
			now[k] = Entry{}
		} else if want[k] {
			wantGone = append(wantGone, k)
		}
	}
	slices.Sort(wantGone)
	if got := s.gone(now); !slices.Equal(got, wantGone) {
		t.Fatalf("%s: gone = %q, want %q", step, got, wantGone)
	}
	var all []string
	for k, ok := range want {
		if ok {
			all = append(all, k)
		}
	}
	slices.Sort(all)
	if got := s.gone(nil); !slices.Equal(got, all) {
		t.Fatalf("%s: gone(nil) = %q, want %q", step, got, all)
	}
}

func TestKeySetEmpty(t *testing.T) {
	for _, s := range []*keySet{{}, newKeySet(0, nil)} {
		if s.has("") || s.has("a") {
			t.Fatal("an empty set has a key")
		}
		if got := s.gone(nil); len(got) != 0 {
			t.Fatalf("gone of an empty set = %q", got)
		}
		s.delete("a") // nothing to delete
		s.add("a")
		if !s.has("a") || s.has("") || s.has("b") {
			t.Fatal("after add(a) the set is not {a}")
		}
	}
}

func TestKeySetDeletedThenAddedAgain(t *testing.T) {
	keys := []string{"a.b", "a.b.c", "a.bc"}
	s := newKeySet(len(keys), func(i int) string { return keys[i] })
	s.delete("a.b")
	s.add("a.b")
	s.delete("x") // never there
	s.add("a.ba")
	s.delete("a.ba")
	s.add("a.ba")
	want := map[string]bool{"a.b": true, "a.b.c": true, "a.bc": true, "a.ba": true}
	checkKeySet(t, s, want, []string{"a", "a.", "a.b", "a.b.c", "a.ba", "a.bc", "a.bd", "x", ""}, "after re-adds")
}

// TestKeySetAgainstAMap puts and deletes keys that share long prefixes (as a
// bucket's "<node>.<module>.<key>" do), starting from snapshots of several
// sizes, through many merges, comparing with a plain map after each change.
func TestKeySetAgainstAMap(t *testing.T) {
	var bucket []string
	for m := range 6 {
		for k := range 60 {
			bucket = append(bucket, fmt.Sprintf("node-000.n000-m%04d.key-%d", m, k))
		}
		bucket = append(bucket, fmt.Sprintf("node-000.n000-m%04d", m), fmt.Sprintf("node-000.n000-m%04d.", m))
	}
	bucket = append(bucket, "", "n", "node-000", "z\xff")
	// Every string of a and b up to 6 long: each a prefix of many others.
	ab := []string{""}
	for i := 0; i < len(ab); i++ {
		if len(ab[i]) < 6 {
			ab = append(ab, ab[i]+"a", ab[i]+"b")
		}
	}
	for _, c := range []struct {
		universe []string
		initial  int
	}{{bucket, 0}, {bucket, 1}, {bucket, 17}, {bucket, 100}, {bucket, len(bucket)}, {ab, 0}, {ab, 40}, {ab, len(ab)}} {
		universe, initial := c.universe, c.initial
		t.Run(fmt.Sprint(len(universe), "/", initial), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(initial)))
			snap := slices.Clone(universe)
			r.Shuffle(len(snap), func(i, j int) { snap[i], snap[j] = snap[j], snap[i] })
			snap = snap[:initial]
			slices.Sort(snap)
			s := newKeySet(len(snap), func(i int) string { return snap[i] })
			want := map[string]bool{}
			for _, k := range snap {
				want[k] = true
			}
			checkKeySet(t, s, want, universe, "snapshot")
			bulks := map[string]bool{s.bulk: true}
			for step := range 3000 {
				k := universe[r.IntN(len(universe))]
				if r.IntN(2) == 0 {
					s.add(k)
					want[k] = true
				} else {
					s.delete(k)
					delete(want, k)
				}
				if step%7 == 0 || step > 2900 {
					checkKeySet(t, s, want, universe, fmt.Sprintf("step %d", step))
				}
				bulks[s.bulk] = true
			}
			if len(bulks) < 5 {
				t.Fatalf("only %d bulks: the changes were not merged", len(bulks))
			}
		})
	}
}

// A put of a key the bulk holds allocates nothing; nor does a lookup.
func TestKeySetPutOfAKnownKeyAllocatesNothing(t *testing.T) {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("node-000.n000-m%04d.key", i)
	}
	s := newKeySet(len(keys), func(i int) string { return keys[i] })
	k := string([]byte(keys[517]))
	if n := testing.AllocsPerRun(100, func() { s.add(k); s.has(k); s.has("node-000.n000-m0517.kez") }); n != 0 {
		t.Fatalf("%v allocations per put of a known key", n)
	}
}

package graph

import (
	"testing"
)

// As Skyframe's changePruning: a file that does not depend on the changed
// input fails the test if it is recomputed, and a middle node whose value
// does not change stops the recomputation of what reads it.
func TestAFileThatDoesNotDependOnTheChangeIsNeverRecomputed(t *testing.T) {
	g := New()
	a, b := mustInput(t, g, "a"), mustInput(t, g, "b")
	armed := false
	tripwire := func(in In) (any, error) {
		if armed {
			t.Fatal("tripwire: file:other was recomputed")
		}
		return concat(in)
	}
	mid, _ := g.Derived(key("ph", "first"), firstLetters, a)
	g.Derived(key("file", "reads-a"), concat, a)
	g.Derived(key("file", "other"), tripwire, b)
	g.Derived(key("file", "behind-cutoff"), tripwire, mid)
	g.Set(a, "apple")
	g.Set(b, "banana")
	g.Stabilize()
	armed = true
	g.Set(a, "avocado") // first letter unchanged: behind-cutoff must not run
	ch := g.Stabilize()
	if len(ch) != 2 {
		t.Fatalf("changed %v", changedKeys(ch))
	}
}

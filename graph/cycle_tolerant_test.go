package graph

import (
	"strings"
	"testing"
)

// readyOnly concatenates the ready inputs' values (a tolerant compute).
func readyOnly(in In) (any, error) {
	var b strings.Builder
	for i := 0; i < in.Len(); i++ {
		if in.State(i) == Ready {
			b.WriteString(in.Value(i).(string))
		}
	}
	return b.String(), nil
}

// A tolerant node on a refused cycle computes over the inputs it has, the
// cycle's nodes it reads failed, so a reader off the cycle is not failed
// by it; the cycle's other nodes fail with it named.
func TestATolerantNodeOnACycleComputesWithoutIt(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	coll, _ := g.Derived(key("coll", "c1"), readyOnly, a)
	g.MarkTolerant(coll)
	need, _ := g.Derived(key("need", "c1"), concat, coll)
	item, _ := g.Derived(key("item", "x"), concat, need)
	reader, _ := g.Derived(key("file", "r"), concat, coll)
	g.Set(a, "A")
	g.Stabilize()
	if err := g.SetInputs(coll, a, item); err == nil {
		t.Fatal("cycle not refused")
	}
	g.Stabilize()
	for _, n := range []*Node{need, item} {
		if n.State() != Failed || !strings.Contains(n.Why(), "cycle: ") {
			t.Fatalf("%v not failed with the cycle", n)
		}
	}
	if coll.State() != Ready || coll.Value() != "A" || reader.State() != Ready || reader.Value() != "A" {
		t.Fatalf("coll %v %v, reader %v %v", coll, coll.Value(), reader, reader.Value())
	}
}

package graph

import (
	"fmt"
	"reflect"
	"testing"
)

// A node's cause is kept as a mask over its inputs; these check that it
// names the same keys a list would, through rewiring and past 64 inputs.
func TestCauseKeptThroughRewiring(t *testing.T) {
	g := New()
	a, b, c := mustInput(t, g, "a"), mustInput(t, g, "b"), mustInput(t, g, "c")
	valueOfB := func(in In) (any, error) {
		for i := 0; i < in.Len(); i++ {
			if in.Key(i).Name == "b" {
				return in.Value(i), nil
			}
		}
		return nil, nil
	}
	f, _ := g.Derived(key("file", "f"), valueOfB, a, b)
	if g.Cause(f) != nil {
		t.Fatalf("cause before any change: %v", g.Cause(f))
	}
	g.Set(a, "A")
	g.Set(b, "B")
	g.Stabilize()
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{a.Key(), b.Key()}) {
		t.Fatalf("cause %v", got)
	}
	g.Set(b, "B2")
	g.Stabilize()
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{b.Key()}) {
		t.Fatalf("cause %v", got)
	}
	// Rewired, recomputed to the same value (no change): the cause still
	// names b, not c, which now sits at b's old position.
	g.Set(c, "C")
	_ = g.SetInputs(f, b, c)
	g.Stabilize()
	if f.Value() != "B2" {
		t.Fatalf("value %v", f.Value())
	}
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{b.Key()}) {
		t.Fatalf("cause after rewiring %v", got)
	}
	// A recompute where no input changed leaves an empty cause.
	g.SetCompute(f, concat)
	g.Stabilize()
	if got := g.Cause(f); got == nil || len(got) != 0 {
		t.Fatalf("cause %#v, want empty", got)
	}
}

func TestCauseOfManyInputs(t *testing.T) {
	g := New()
	var ins []*Node
	for i := 0; i < 70; i++ {
		n := mustInput(t, g, fmt.Sprint(i))
		g.Set(n, "v")
		ins = append(ins, n)
	}
	f, _ := g.Derived(key("file", "f"), concat, ins...)
	g.Stabilize()
	if got := g.Cause(f); len(got) != 70 {
		t.Fatalf("cause has %d keys", len(got))
	}
	g.Set(ins[3], "w")
	g.Set(ins[68], "w")
	g.Stabilize()
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{ins[3].Key(), ins[68].Key()}) {
		t.Fatalf("cause %v", got)
	}
}

// Rewired to a list that still holds the cause's inputs in order, a node
// keeps its mask; it names the same keys.
func TestCauseRemappedOnRewiring(t *testing.T) {
	g := New()
	a, b, c := mustInput(t, g, "a"), mustInput(t, g, "b"), mustInput(t, g, "c")
	g.Set(a, "A")
	g.Set(b, "B")
	f, _ := g.Derived(key("file", "f"), concat, a, b)
	g.Stabilize()
	g.Set(b, "B2")
	g.Stabilize()
	g.Set(c, "C")
	g.Stabilize()
	// c before b, a gone: b is found at its new place.
	_ = g.SetInputs(f, c, b)
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{b.Key()}) {
		t.Fatalf("cause after rewiring %v", got)
	}
	if !f.is(flagCauseBits) || len(g.causes) != 0 {
		t.Fatalf("cause not kept as a mask (bits %v, map %v)", f.is(flagCauseBits), g.causes)
	}
	// b gone: the keys are kept.
	_ = g.SetInputs(f, c, a)
	if got := g.Cause(f); !reflect.DeepEqual(got, []Key{b.Key()}) {
		t.Fatalf("cause after rewiring %v", got)
	}
}

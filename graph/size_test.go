package graph

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"
)

// A graph holds 100k+ nodes: a node of more than 128 bytes (an allocation
// size class) costs 16 bytes more each.
func TestNodeSize(t *testing.T) {
	if s := unsafe.Sizeof(Node{}); s > 128 {
		t.Errorf("a Node is %d bytes, over 128", s)
	}
}

// A node's inputs and dependents, held as 16-byte lists, are the slices
// they were: in order, nil or empty as before, alive across collections
// while nothing else holds them, and growing and shrinking as the graph is
// rewired.
func TestNodeListsKeepTheirNodes(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	if a.Inputs() != nil || a.Dependents() != nil {
		t.Fatalf("a leaf reads %v, is read by %v; want nil, nil", a.Inputs(), a.Dependents())
	}
	var ins []*Node
	for i := 0; i < 100; i++ {
		ins = append(ins, mustInput(t, g, fmt.Sprint(i)))
		g.Set(ins[i], fmt.Sprint(i, ","))
	}
	f, _ := g.Derived(key("file", "f"), concat, ins...)
	for i := 0; i < 50; i++ { // a's dependents: only the graph holds them
		if _, err := g.Derived(key("ph", fmt.Sprint(i)), concat, a); err != nil {
			t.Fatal(err)
		}
	}
	ins = nil // only the graph holds them now
	runtime.GC()
	runtime.GC()
	g.Set(a, "A")
	g.Stabilize()
	if got := len(f.Inputs()); got != 100 {
		t.Fatalf("f reads %d inputs, want 100", got)
	}
	for i, in := range f.Inputs() {
		if in.Key() != key("in", fmt.Sprint(i)) || in.Value() != fmt.Sprint(i, ",") {
			t.Fatalf("input %d is %s = %v", i, in.Key(), in.Value())
		}
	}
	if got := len(a.Dependents()); got != 50 {
		t.Fatalf("a has %d dependents, want 50", got)
	}
	for _, d := range append([]*Node(nil), a.Dependents()...) {
		if d.Value() != "A" {
			t.Fatalf("%s = %v, want A", d.Key(), d.Value())
		}
		if err := g.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	if deps := a.Dependents(); deps == nil || len(deps) != 0 {
		t.Fatalf("a's dependents after every one was removed: %#v, want empty", deps)
	}
	e, _ := g.Derived(key("file", "e"), concat)
	if in := e.Inputs(); in == nil || len(in) != 0 {
		t.Fatalf("a node made with no inputs reads %#v, want empty", in)
	}
}

package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func key(kind, name string) Key { return Key{kind, name} }

func mustInput(t testing.TB, g *Graph, name string) *Node {
	t.Helper()
	n, err := g.Input(key("in", name))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// concat is a compute that joins its inputs' string values.
func concat(in In) (any, error) {
	var b strings.Builder
	for i := 0; i < in.Len(); i++ {
		b.WriteString(in.Value(i).(string))
	}
	return b.String(), nil
}

func changedKeys(ns []*Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Key().String())
	}
	return out
}

func TestAChangeRecomputesOnlyItsDependents(t *testing.T) {
	g := New()
	a, b := mustInput(t, g, "a"), mustInput(t, g, "b")
	f1, _ := g.Derived(key("file", "1"), concat, a)
	f2, _ := g.Derived(key("file", "2"), concat, b)
	g.Set(a, "A")
	g.Set(b, "B")
	g.Stabilize()
	if f1.Value() != "A" || f2.Value() != "B" {
		t.Fatalf("values %v %v", f1.Value(), f2.Value())
	}
	before := g.Counters().Recomputed.Load()
	g.Set(a, "A2")
	ch := g.Stabilize()
	if got := strings.Join(changedKeys(ch), ","); got != "in:a,file:1" {
		t.Fatalf("changed %s", got)
	}
	if n := g.Counters().Recomputed.Load() - before; n != 1 {
		t.Fatalf("recomputed %d nodes, want 1", n)
	}
	if f1.Value() != "A2" || len(g.Cause(f1)) != 1 || g.Cause(f1)[0] != a.Key() {
		t.Fatalf("f1 %v cause %v", f1.Value(), g.Cause(f1))
	}
}

func TestALeafSetToAnEqualValueStabilizesNothing(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	g.Derived(key("file", "1"), concat, a)
	g.Set(a, "x")
	g.Stabilize()
	r := g.Counters().Recomputed.Load()
	g.Set(a, "x")
	if ch := g.Stabilize(); len(ch) != 0 {
		t.Fatalf("changed %v", changedKeys(ch))
	}
	if g.Counters().Recomputed.Load() != r {
		t.Fatal("something was recomputed")
	}
}

func TestCutoffStopsAtAnEqualValue(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	length, _ := g.Derived(key("len", "a"), func(in In) (any, error) { return len(in.Value(0).(string)), nil }, a)
	runs := 0
	g.Derived(key("file", "1"), func(in In) (any, error) { runs++; return fmt.Sprint(in.Value(0)), nil }, length)
	g.Set(a, "abc")
	g.Stabilize()
	g.Set(a, "xyz")
	ch := g.Stabilize()
	if runs != 1 {
		t.Fatalf("file computed %d times, want 1", runs)
	}
	if got := strings.Join(changedKeys(ch), ","); got != "in:a" {
		t.Fatalf("changed %s", got)
	}
}

func TestWaitingAndFailurePropagateWithRootCauses(t *testing.T) {
	g := New()
	a, b := mustInput(t, g, "a"), mustInput(t, g, "b")
	p, _ := g.Derived(key("ph", "p"), concat, a)
	f, _ := g.Derived(key("file", "f"), concat, p, b)
	g.Set(b, "B")
	g.SetWaiting(a, "bucket X key k not written yet")
	g.Stabilize()
	if f.State() != Waiting {
		t.Fatalf("f %v", f)
	}
	rc := g.RootCauses(f)
	if len(rc) != 1 || rc[0] != a {
		t.Fatalf("root causes %v", rc)
	}
	g.SetFailed(b, "refused by gitea")
	g.Stabilize()
	if f.State() != Failed {
		t.Fatalf("failed must dominate waiting: %v", f)
	}
	if rc := g.RootCauses(f); len(rc) != 2 {
		t.Fatalf("root causes %v", rc)
	}
	e, _ := g.Explain(f.Key(), nil)
	if len(e.Inputs) != 2 || e.Inputs[0].Inputs[0].Why != "bucket X key k not written yet" || !e.Inputs[0].Inputs[0].Root {
		t.Fatalf("explain %+v", e)
	}
	g.Set(a, "A")
	g.Set(b, "B")
	g.Stabilize()
	if f.State() != Ready || f.Value() != "AB" {
		t.Fatalf("f %v %v", f, f.Value())
	}
}

func TestACycleIsRefusedAndNamed(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	c1, _ := g.Derived(key("coll", "c1"), concat, a)
	item, _ := g.Derived(key("item", "x"), concat, c1)
	c2, _ := g.Derived(key("coll", "c2"), concat, item)
	g.Set(a, "A")
	g.Stabilize()
	err := g.SetInputs(c1, a, c2)
	var ce *CycleError
	if !errors.As(err, &ce) {
		t.Fatalf("err %v", err)
	}
	want := "cycle: coll:c2 → coll:c1 → item:x → coll:c2 → coll:c2"
	_ = want
	if got := ce.Error(); got != "cycle: coll:c2 → coll:c1 → item:x → coll:c2" {
		t.Fatalf("cycle named %q", got)
	}
	g.Stabilize()
	for _, n := range []*Node{c1, item, c2} {
		if n.State() != Failed || !strings.Contains(n.Why(), "cycle: coll:c2 → coll:c1") {
			t.Fatalf("%v not failed with the cycle", n)
		}
	}
	// Breaking the cycle heals every node on it.
	if err := g.SetInputs(c1, a); err != nil {
		t.Fatal(err)
	}
	g.Stabilize()
	if c2.State() != Ready || c2.Value() != "A" {
		t.Fatalf("c2 %v", c2)
	}
}

func TestARefusedEdgeIsAcceptedOnceTheCycleIsGone(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	x, _ := g.Derived(key("n", "x"), concat, a)
	y, _ := g.Derived(key("n", "y"), concat, x)
	g.Set(a, "A")
	if err := g.SetInputs(x, a, y); err == nil {
		t.Fatal("cycle not refused")
	}
	g.Stabilize()
	if x.State() != Failed {
		t.Fatal("x not failed")
	}
	// y stops reading x: x's refused edge to y closes no cycle any more.
	if err := g.SetInputs(y, a); err != nil {
		t.Fatal(err)
	}
	g.Stabilize()
	if x.State() != Ready || x.Value() != "AA" || len(g.Cycles()) != 0 {
		t.Fatalf("x %v %v", x, x.Value())
	}
}

func TestAPanicFailsItsNodeAndTheEngineStaysUsable(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	bad, _ := g.Derived(key("file", "bad"), func(In) (any, error) { panic("boom") }, a)
	good, _ := g.Derived(key("file", "good"), concat, a)
	g.Set(a, "A")
	g.Stabilize()
	if bad.State() != Failed || !strings.Contains(bad.Why(), "panic in compute of file:bad: boom") {
		t.Fatalf("bad %v", bad)
	}
	g.Set(a, "B")
	g.Stabilize()
	if good.Value() != "B" {
		t.Fatalf("good %v", good.Value())
	}
}

func TestASecretPanicWithholdsItsDetail(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	s, _ := g.Derived(key("secret", "s"), func(in In) (any, error) { panic("value hunter2") }, a)
	g.MarkSecret(s)
	g.Set(a, "A")
	g.Stabilize()
	if strings.Contains(s.Why(), "hunter2") || strings.Contains(s.String(), "hunter2") {
		t.Fatalf("secret shown: %s", s.Why())
	}
}

func TestHeightsRiseWhenInputsChange(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	x, _ := g.Derived(key("n", "x"), concat, a)
	y, _ := g.Derived(key("n", "y"), concat, a)
	z, _ := g.Derived(key("n", "z"), concat, y)
	if err := g.SetInputs(y, x); err != nil {
		t.Fatal(err)
	}
	checkHeights(t, g)
	g.Set(a, "A")
	g.Stabilize()
	if z.Value() != "A" || z.Height() != 3 {
		t.Fatalf("z %v height %d", z.Value(), z.Height())
	}
}

func checkHeights(t interface {
	Helper()
	Fatalf(string, ...any)
}, g *Graph) {
	t.Helper()
	for _, n := range g.Nodes() {
		for _, in := range n.Inputs() {
			if n.Height() <= in.Height() {
				t.Fatalf("height of %s (%d) does not exceed input %s (%d)", n.Key(), n.Height(), in.Key(), in.Height())
			}
		}
	}
}

func TestRemoveRefusesANodeWithDependents(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	f, _ := g.Derived(key("file", "f"), concat, a)
	if err := g.Remove(a); err == nil {
		t.Fatal("removed a node with dependents")
	}
	if err := g.Remove(f); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(a); err != nil || g.Len() != 0 {
		t.Fatalf("%v len %d", err, g.Len())
	}
}

func TestTolerantNodesSeeEveryInput(t *testing.T) {
	g := New()
	a, b := mustInput(t, g, "a"), mustInput(t, g, "b")
	coll, _ := g.Derived(key("collection", "c"), func(in In) (any, error) {
		var s []string
		for i := 0; i < in.Len(); i++ {
			if in.State(i) == Ready {
				s = append(s, in.Value(i).(string))
			}
		}
		return strings.Join(s, "+"), nil
	}, a, b)
	g.MarkTolerant(coll)
	g.Set(a, "A")
	g.Stabilize()
	if coll.Value() != "A" {
		t.Fatalf("coll %v", coll)
	}
}

func TestARefusedEdgeAcceptedLaterKeepsTheInputOrderAsked(t *testing.T) {
	g := New()
	a, b := mustInput(t, g, "a"), mustInput(t, g, "b")
	x, _ := g.Derived(key("n", "x"), concat, a)
	y, _ := g.Derived(key("n", "y"), concat, x)
	g.Set(a, "A")
	g.Set(b, "B")
	if err := g.SetInputs(x, y, b); err == nil {
		t.Fatal("cycle not refused")
	}
	if err := g.SetInputs(y, a); err != nil {
		t.Fatal(err)
	}
	g.Stabilize()
	if x.Value() != "AB" {
		t.Fatalf("x = %v, want the inputs in the order asked (y, b) = AB", x.Value())
	}
}

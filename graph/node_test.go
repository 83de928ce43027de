package graph

import "testing"

// A node holds its value or its why in one field: a ready node whose value
// is a string has no why, a node not ready no value, whichever it was
// before.
func TestNodeValueOrWhy(t *testing.T) {
	g := New()
	n, _ := g.Input(Key{"config", "a"})
	if n.Value() != nil || n.Why() != "not set yet" {
		t.Fatalf("new input: value %v, why %q", n.Value(), n.Why())
	}
	g.Set(n, "a string value")
	if n.Value() != "a string value" || n.Why() != "" {
		t.Fatalf("set: value %v, why %q", n.Value(), n.Why())
	}
	g.SetWaiting(n, "the vault is sealed")
	if n.Value() != nil || n.Why() != "the vault is sealed" || n.State() != Waiting {
		t.Fatalf("waiting: value %v, why %q, %v", n.Value(), n.Why(), n.State())
	}
	g.Set(n, nil)
	if n.State() != Ready || n.Value() != nil || n.Why() != "" {
		t.Fatalf("set to nil: %v, value %v, why %q", n.State(), n.Value(), n.Why())
	}
	d, _ := g.Derived(Key{"file", "f"}, func(in In) (any, error) {
		if in.State(0) != Ready {
			return nil, Wait("input says %s", in.Why(0))
		}
		return "why", nil
	}, n)
	g.MarkTolerant(d)
	g.Stabilize()
	if d.Value() != "why" || d.Why() != "" {
		t.Fatalf("derived: value %v, why %q", d.Value(), d.Why())
	}
	g.SetFailed(n, "no such key")
	g.Stabilize()
	if d.State() != Waiting || d.Why() != "input says no such key" || d.Value() != nil {
		t.Fatalf("derived after its input failed: %v, value %v, why %q", d.State(), d.Value(), d.Why())
	}
}

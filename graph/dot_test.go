package graph

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
)

func TestDOTParsesBackWithTheEnginesNodesAndEdgesAndNoSecret(t *testing.T) {
	g := New()
	a, s := mustInput(t, g, "a"), mustInput(t, g, "s")
	g.MarkSecret(s)
	p, _ := g.Derived(key("ph", "p"), concat, a)
	f, _ := g.Derived(key("file", "/etc/x.conf"), concat, p, s)
	g.Derived(key("file", "other"), concat, a)
	g.Set(a, "A")
	g.Set(s, "hunter2-secret")
	g.Stabilize()
	out, err := g.DOT("mesh")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2") {
		t.Fatal("secret value in DOT")
	}
	back := simple.NewDirectedGraph()
	if err := dot.Unmarshal(out, back); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, out)
	}
	edges := 0
	for _, n := range g.Nodes() {
		edges += len(n.Inputs())
	}
	if back.Nodes().Len() != g.Len() || back.Edges().Len() != edges || edges != 4 {
		t.Fatalf("nodes %d edges %d\n%s", back.Nodes().Len(), back.Edges().Len(), out)
	}
	again, _ := g.DOT("mesh")
	if string(again) != string(out) {
		t.Fatal("DOT output is not stable")
	}
	sub, _ := g.DOT("one", f.Key())
	if strings.Contains(string(sub), "other") || !strings.Contains(string(sub), `"in:s"`) {
		t.Fatalf("restricted DOT:\n%s", sub)
	}
}

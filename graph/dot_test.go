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

// A node its owner says is in another state than its own (Drawing.Shown)
// is drawn in that state; every other node in its own.
func TestDOTDrawsANodeInTheStateItsOwnerShows(t *testing.T) {
	g := New()
	a := mustInput(t, g, "a")
	m, _ := g.Derived(key("module", "web"), concat, a)
	g.Set(a, "A")
	g.Stabilize()
	out, err := g.DOTDrawn("mesh", Drawing{Shown: func(n *Node) (State, bool) { return Failed, n == m }})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	web := s[strings.Index(s, `"module:web" [`):]
	web = web[:strings.Index(web, "]")]
	in := s[strings.Index(s, `"in:a" [`):]
	in = in[:strings.Index(in, "]")]
	if !strings.Contains(web, "color=red") || !strings.Contains(web, "state=failed") ||
		!strings.Contains(in, "color=darkgreen") || !strings.Contains(in, "state=ready") || m.State() != Ready {
		t.Fatalf("DOT:\n%s", s)
	}
}

package graph

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
)

// `graph dot` prints the DOT to the operator's terminal, and a node's
// label is its kind and name: a module's name (a key token may hold any
// byte) or a file's path from the plan. A control rune in one (ESC and an
// OSC setting the terminal's title, a C1 CSI, a bidi override) is written
// escaped, never raw, and the output still parses as DOT.
func TestADOTLabelHoldsNoControlRuneRaw(t *testing.T) {
	g := New()
	bad := "web /etc/a\x1b]0;owned\x07\u009b2J\u202ex\x7f"
	a := mustInput(t, g, "a")
	g.Derived(key("file", bad), concat, a)
	g.Set(a, "A")
	g.Stabilize()
	out, err := g.DOT("mesh")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\x7f"} {
		if strings.Contains(string(out), r) {
			t.Errorf("DOT holds %q raw:\n%q", r, out)
		}
	}
	if err := dot.Unmarshal(out, simple.NewDirectedGraph()); err != nil {
		t.Fatalf("unmarshal: %v\n%s", err, out)
	}
}

package graph

import (
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
)

// DOT renders the graph in Graphviz DOT with gonum's encoder: nodes labelled
// kind:name and coloured by state, in key order so the output is stable.
// With roots given, only they and the nodes they read are shown. No value
// appears; a secret node is named only.
func (g *Graph) DOT(name string, roots ...Key) ([]byte, error) {
	var ns []*Node
	if len(roots) == 0 {
		ns = g.Nodes()
	} else {
		var rs []*Node
		for _, k := range roots {
			rs = append(rs, g.Node(k))
		}
		ns = g.Reach(rs...)
	}
	dg := simple.NewDirectedGraph()
	ids := make(map[*Node]int64, len(ns))
	for i, n := range ns {
		ids[n] = int64(i)
		dg.AddNode(dotNode{id: int64(i), n: n})
	}
	for _, n := range ns {
		for _, d := range n.deps {
			if j, ok := ids[d]; ok && ids[n] != j {
				dg.SetEdge(dg.NewEdge(dg.Node(ids[n]), dg.Node(j)))
			}
		}
	}
	return dot.Marshal(dg, name, "", "  ")
}

type dotNode struct {
	id int64
	n  *Node
}

func (d dotNode) ID() int64     { return d.id }
func (d dotNode) DOTID() string { return d.n.Key().String() }

func (d dotNode) Attributes() []encoding.Attribute {
	color := map[State]string{Ready: "darkgreen", Waiting: "orange", Failed: "red"}[d.n.state]
	shape := "ellipse"
	if d.n.compute == nil {
		shape = "box"
	}
	label := d.n.Key().String()
	if d.n.secret {
		label += " (secret)"
	}
	attrs := []encoding.Attribute{
		{Key: "label", Value: quote(label)},
		{Key: "color", Value: color},
		{Key: "shape", Value: shape},
		{Key: "state", Value: d.n.state.String()},
	}
	return attrs
}

func quote(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(append(b, '"'))
}

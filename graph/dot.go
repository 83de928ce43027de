package graph

import (
	"strconv"

	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
)

// DOT renders the graph in Graphviz DOT with gonum's encoder: nodes labelled
// kind:name and coloured by state, in key order so the output is stable.
// With roots given, only they and the nodes they read are shown. No value
// appears; a secret node is named only.
func (g *Graph) DOT(name string, roots ...Key) ([]byte, error) {
	return g.DOTBehind(name, nil, roots...)
}

// DOTBehind is DOT with, for each input leaf behind names (ok), one more
// box drawn in the leaf's state as its input: what its owner folded into
// the leaf rather than keeping as a node of its own (a config need stands
// for its bucket key). Leaves naming the same key share one box.
func (g *Graph) DOTBehind(name string, behind func(*Node) (Key, bool), roots ...Key) ([]byte, error) {
	var d Drawing
	if behind != nil {
		d.Behind = func(n *Node) []Folded {
			if k, ok := behind(n); ok {
				return []Folded{{Key: k, State: n.state}}
			}
			return nil
		}
	}
	return g.DOTDrawn(name, d, roots...)
}

// Folded is an input its owner folded into a leaf (Drawing.Behind), drawn
// as a box in State.
type Folded struct {
	Key   Key
	State State
}

// Drawing says what DOTDrawn draws beyond the nodes and their own states.
type Drawing struct {
	// Behind, for an input leaf, names the inputs its owner folded into
	// it, each in the state it is drawn in (see DOTBehind); nil: none.
	Behind func(*Node) []Folded
	// Shown, when it says so (ok), is the state a node is drawn in (its
	// colour and its state attribute) instead of its own: its owner's
	// word for it where the owner knows more than the engine does, as a
	// module the engine has ready whose output was then refused. nil:
	// every node is drawn in its own state.
	Shown func(*Node) (State, bool)
}

// DOTDrawn is DOT drawn as d says.
func (g *Graph) DOTDrawn(name string, d Drawing, roots ...Key) ([]byte, error) {
	behind := d.Behind
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
		st := n.state
		if d.Shown != nil {
			if shown, ok := d.Shown(n); ok {
				st = shown
			}
		}
		dg.AddNode(dotNode{id: int64(i), n: n, state: st})
	}
	for _, n := range ns {
		for _, d := range n.Dependents() {
			if j, ok := ids[d]; ok && ids[n] != j {
				dg.SetEdge(dg.NewEdge(dg.Node(ids[n]), dg.Node(j)))
			}
		}
	}
	if behind != nil {
		boxes := map[Key]int64{}
		for _, n := range ns {
			if n.compute != nil {
				continue
			}
			for _, f := range behind(n) {
				id, made := boxes[f.Key]
				if real, shown := ids[g.Node(f.Key)]; shown { // a node of its own after all
					id, made = real, true
				}
				if !made {
					id = int64(len(ns) + len(boxes))
					boxes[f.Key] = id
					dg.AddNode(dotBox{id: id, key: f.Key, state: f.State})
				}
				dg.SetEdge(dg.NewEdge(dg.Node(id), dg.Node(ids[n])))
			}
		}
	}
	return dot.Marshal(dg, name, "", "  ")
}

// dotBox is an input drawn that is not a node of the graph (DOTBehind).
type dotBox struct {
	id    int64
	key   Key
	state State
}

func (d dotBox) ID() int64     { return d.id }
func (d dotBox) DOTID() string { return d.key.String() }

func (d dotBox) Attributes() []encoding.Attribute {
	return []encoding.Attribute{
		{Key: "label", Value: quote(d.key.String())},
		{Key: "color", Value: stateColor[d.state]},
		{Key: "shape", Value: "box"},
		{Key: "state", Value: d.state.String()},
	}
}

// stateColor is the colour of a node in each state.
var stateColor = map[State]string{Ready: "darkgreen", Waiting: "orange", Failed: "red"}

type dotNode struct {
	id    int64
	n     *Node
	state State // drawn in: its own, unless Drawing.Shown says otherwise
}

func (d dotNode) ID() int64     { return d.id }
func (d dotNode) DOTID() string { return d.n.Key().String() }

func (d dotNode) Attributes() []encoding.Attribute {
	color := stateColor[d.state]
	shape := "ellipse"
	if d.n.compute == nil {
		shape = "box"
	}
	label := d.n.Key().String()
	if d.n.is(flagSecret) {
		label += " (secret)"
	}
	attrs := []encoding.Attribute{
		{Key: "label", Value: quote(label)},
		{Key: "color", Value: color},
		{Key: "shape", Value: shape},
		{Key: "state", Value: d.state.String()},
	}
	return attrs
}

// quote is s as a DOT quoted string: Go's quoting, which escapes `"` and
// `\` as DOT reads them and writes every rune that is not printable (ESC,
// a C1 CSI, a bidi override, DEL) as an escape, never raw: `graph dot`
// prints to the operator's terminal, and a module's name or a file's path
// may hold any byte. gonum quotes the node IDs the same way.
func quote(s string) string { return strconv.Quote(s) }

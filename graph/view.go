package graph

import (
	gg "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/simple"
)

// view shows the engine's nodes to gonum's algorithms as a directed graph
// whose edges run input → dependent. It copies nothing.
type view struct{ g *Graph }

var _ gg.Directed = view{}

func (v view) Node(id int64) gg.Node {
	if n := v.g.byNumber(id); n != nil {
		return n
	}
	return nil
}

func (v view) Nodes() gg.Nodes {
	ns := make([]gg.Node, 0, v.g.Len())
	for _, n := range v.g.Nodes() {
		ns = append(ns, n)
	}
	return iterator.NewOrderedNodes(ns)
}

func (v view) From(id int64) gg.Nodes {
	n := v.g.byNumber(id)
	if n == nil || len(n.Dependents()) == 0 {
		return gg.Empty
	}
	deps := n.Dependents()
	ns := make([]gg.Node, len(deps))
	for i, d := range deps {
		ns[i] = d
	}
	return iterator.NewOrderedNodes(ns)
}

func (v view) To(id int64) gg.Nodes {
	n := v.g.byNumber(id)
	if n == nil || len(n.Inputs()) == 0 {
		return gg.Empty
	}
	inputs := n.Inputs()
	ns := make([]gg.Node, len(inputs))
	for i, in := range inputs {
		ns[i] = in
	}
	return iterator.NewOrderedNodes(ns)
}

func (v view) HasEdgeBetween(x, y int64) bool { return v.HasEdgeFromTo(x, y) || v.HasEdgeFromTo(y, x) }

func (v view) HasEdgeFromTo(u, w int64) bool {
	n := v.g.byNumber(u)
	return n != nil && containsNode(n.Dependents(), v.g.byNumber(w))
}

func (v view) Edge(u, w int64) gg.Edge {
	if !v.HasEdgeFromTo(u, w) {
		return nil
	}
	return simple.Edge{F: v.g.byNumber(u), T: v.g.byNumber(w)}
}

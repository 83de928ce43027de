package graph

import (
	"strings"

	gg "gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/traverse"
)

// CycleError says an input edge was refused because it would close a
// cycle. Cycle lists the keys in data-flow order, the first repeated last.
type CycleError struct {
	Node  Key
	Cycle []Key
}

func (e *CycleError) Error() string {
	parts := make([]string, len(e.Cycle))
	for i, k := range e.Cycle {
		parts[i] = k.String()
	}
	return "cycle: " + strings.Join(parts, " → ")
}

// reachable walks the dependents of n (gonum's breadth-first traversal) and
// returns each reached node's parent on the way.
func (g *Graph) reachable(n *Node) map[int64]int64 {
	parent := map[int64]int64{}
	bf := traverse.BreadthFirst{Traverse: func(e gg.Edge) bool {
		if _, seen := parent[e.To().ID()]; !seen {
			parent[e.To().ID()] = e.From().ID()
		}
		return true
	}}
	bf.Walk(view{g: g}, n, nil)
	return parent
}

// cyclePath names the cycle closed by the edge in → n: in → n → … → in.
func (g *Graph) cyclePath(n, in *Node, parent map[int64]int64) *CycleError {
	var back []Key
	for id := int64(in.id); id != int64(n.id); id = parent[id] {
		back = append(back, g.byID[id].Key())
	}
	cyc := []Key{in.Key(), n.Key()}
	for i := len(back) - 1; i >= 1; i-- {
		cyc = append(cyc, back[i])
	}
	cyc = append(cyc, in.Key())
	return &CycleError{Node: n.Key(), Cycle: cyc}
}

func (g *Graph) clearCycle(n *Node) {
	c, ok := g.cycles[n]
	if !ok {
		return
	}
	delete(g.cycles, n)
	g.rebuildOnCycle()
	for _, k := range c.Cycle {
		if m := g.Node(k); m != nil {
			g.markDirty(m)
		}
	}
}

func (g *Graph) rebuildOnCycle() {
	clear(g.onCycle)
	for _, c := range g.cycles {
		for _, k := range c.Cycle {
			if m := g.Node(k); m != nil {
				g.onCycle[m] = c
				g.markDirty(m)
			}
		}
	}
}

// Cycles lists the refused cycles, sorted by the refused node's key.
func (g *Graph) Cycles() []*CycleError {
	var ns []*Node
	for n := range g.cycles {
		ns = append(ns, n)
	}
	sortNodes(ns)
	out := make([]*CycleError, len(ns))
	for i, n := range ns {
		out[i] = g.cycles[n]
	}
	return out
}

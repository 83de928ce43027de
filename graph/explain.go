package graph

import (
	"fmt"
	"time"
)

// Explanation is a node and, for a node that is not ready, the chain down
// to the root causes of its state. Every direct input is listed; only inputs
// that are not ready are followed further. It never holds a value.
type Explanation struct {
	Key       Key           `json:"key"`
	State     string        `json:"state"`
	Why       string        `json:"why,omitempty"`
	Root      bool          `json:"root,omitempty"` // the state began here
	Input     bool          `json:"input,omitempty"`
	Secret    bool          `json:"secret,omitempty"`
	Since     time.Time     `json:"since"`
	ChangedAt time.Time     `json:"changed_at"`
	Cause     []Key         `json:"cause,omitempty"`
	Meta      any           `json:"meta,omitempty"`
	Inputs    []Explanation `json:"inputs,omitempty"`
}

// Explain returns the tree from the node keyed k down to its root causes.
// Meta, when a function is given, is filled with what it returns for each
// node (the owner's description: a bucket and key, a vault name).
func (g *Graph) Explain(k Key, meta func(*Node) any) (Explanation, error) {
	n := g.Node(k)
	if n == nil {
		return Explanation{}, fmt.Errorf("graph: no node %s", k)
	}
	seen := map[*Node]bool{}
	return g.explain(n, meta, seen), nil
}

func (g *Graph) explain(n *Node, meta func(*Node) any, seen map[*Node]bool) Explanation {
	e := Explanation{
		Key: n.Key(), State: n.state.String(), Why: n.Why(), Input: n.compute == nil,
		Secret: n.is(flagSecret), Since: n.Since(), ChangedAt: n.ChangedAt(), Cause: g.Cause(n),
		Root: n.state != Ready && n.is(flagOwn),
	}
	if meta != nil {
		e.Meta = meta(n)
	}
	if n.state == Ready || seen[n] {
		if n.state == Ready && !seen[n] {
			seen[n] = true
		}
		return e
	}
	seen[n] = true
	for _, in := range n.Inputs() {
		if in.state == Ready {
			ie := Explanation{Key: in.Key(), State: in.state.String(), Input: in.compute == nil,
				Secret: in.is(flagSecret), Since: in.Since(), ChangedAt: in.ChangedAt(), Cause: g.Cause(in)}
			if meta != nil {
				ie.Meta = meta(in)
			}
			e.Inputs = append(e.Inputs, ie)
			continue
		}
		e.Inputs = append(e.Inputs, g.explain(in, meta, seen))
	}
	return e
}

// RootCauses returns the nodes where n's non-ready state began: following
// inputs that are not ready down to those whose own compute, input setting
// or cycle made them wait or fail. A ready node has none.
func (g *Graph) RootCauses(n *Node) []*Node {
	if n.state == Ready {
		return nil
	}
	var out []*Node
	seen := map[*Node]bool{}
	var walk func(*Node)
	walk = func(m *Node) {
		if seen[m] || m.state == Ready {
			return
		}
		seen[m] = true
		if m.is(flagOwn) {
			out = append(out, m)
			return
		}
		for _, in := range m.Inputs() {
			walk(in)
		}
	}
	walk(n)
	sortNodes(out)
	return out
}

// Reach returns the given nodes and every node they read, transitively,
// sorted by key.
func (g *Graph) Reach(roots ...*Node) []*Node {
	seen := map[*Node]bool{}
	var out []*Node
	var walk func(*Node)
	walk = func(m *Node) {
		if seen[m] {
			return
		}
		seen[m] = true
		out = append(out, m)
		for _, in := range m.Inputs() {
			walk(in)
		}
	}
	for _, r := range roots {
		if r != nil {
			walk(r)
		}
	}
	sortNodes(out)
	return out
}

package graph

import "fmt"

// Wiring: the input edges of a node, set all at once, with the heights
// kept above every input and a refused cycle retried when the graph changes.

// SetInputs makes inputs the nodes n reads, in the order its compute sees
// them; n recomputes at the next Stabilize. An input that would close a
// cycle is refused: n and every node on the cycle fail with the cycle named
// until a later rewiring breaks it, and the error is returned.
func (g *Graph) SetInputs(n *Node, inputs ...*Node) error {
	if n.compute == nil {
		return fmt.Errorf("graph: %s is an input and reads nothing", n.Key())
	}
	if g.stabilizing {
		panic("graph: SetInputs during Stabilize")
	}
	err := g.wire(n, inputs)
	g.retryRefused(n)
	return err
}

func (g *Graph) wire(n *Node, inputs []*Node) error {
	for _, in := range n.Inputs() {
		in.deps = listOf(removeNode(in.Dependents(), n))
	}
	delete(g.refused, n)
	g.clearCycle(n)

	var reach map[int64]int64 // dependents reachable from n → their parent
	accepted := make([]*Node, 0, len(inputs))
	var cerr *CycleError
	for _, in := range inputs {
		if in.is(flagRemoved) {
			return fmt.Errorf("graph: %s reads removed node %s", n.Key(), in.Key())
		}
		if in == n {
			if cerr == nil {
				cerr = &CycleError{Node: n.Key(), Cycle: []Key{n.Key(), n.Key()}}
			}
			continue
		}
		if len(n.Dependents()) > 0 {
			if reach == nil {
				reach = g.reachable(n)
			}
			if _, ok := reach[int64(in.id)]; ok {
				if cerr == nil {
					cerr = g.cyclePath(n, in, reach)
				}
				continue
			}
		}
		accepted = append(accepted, in)
	}
	if n.is(flagCauseBits) && !sameNodes(n.Inputs(), accepted) {
		if mask, ok := remapCause(n.causeMask, n.Inputs(), accepted); ok {
			n.causeMask = mask
		} else {
			g.keepCause(n, g.Cause(n)) // the mask cannot name them among the new inputs
		}
	}
	n.inputs = listOf(accepted)
	h := 0
	var linked map[*Node]bool // for long input lists
	if len(accepted) > 16 {
		linked = make(map[*Node]bool, len(accepted))
	}
	for i, in := range accepted {
		// n was taken out of every old input's dependents above, so only an
		// input named twice in this list is already linked.
		dup := false
		if linked != nil {
			dup = linked[in]
			linked[in] = true
		} else {
			dup = containsNode(accepted[:i], in)
		}
		if !dup {
			in.deps = listOf(append(in.Dependents(), n))
		}
		if int(in.height)+1 > h {
			h = int(in.height) + 1
		}
	}
	g.raise(n, h)
	g.markDirty(n)
	if cerr != nil {
		g.refused[n] = append([]*Node(nil), inputs...) // the whole list, in order, to wire again
		g.cycles[n] = cerr
		g.rebuildOnCycle()
		return cerr
	}
	return nil
}

// retryRefused wires again every node whose edge was refused, now that the
// graph has changed; one that no longer closes a cycle is accepted.
func (g *Graph) retryRefused(skip *Node) {
	for m, requested := range g.refused {
		if m == skip {
			continue
		}
		_ = g.wire(m, requested)
	}
}

// remapCause moves a cause mask over inputs old onto inputs new: each
// input it names must be found in new after the one before it, so that the
// mask names the same keys in the same order (a file first wired to its
// plan and archive alone, then to its placeholders too, keeps its mask).
func remapCause(mask uint64, old, new []*Node) (uint64, bool) {
	if len(new) > 64 {
		return 0, false
	}
	var out uint64
	j := 0
	for i, in := range old {
		if mask&(1<<i) == 0 {
			continue
		}
		for j < len(new) && new[j] != in {
			j++
		}
		if j == len(new) {
			return 0, false
		}
		out |= 1 << j
		j++
	}
	return out, true
}

func sameNodes(a, b []*Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func containsNode(ns []*Node, n *Node) bool {
	for _, x := range ns {
		if x == n {
			return true
		}
	}
	return false
}

// raise lifts n to height h (when higher) and its dependents above it.
func (g *Graph) raise(n *Node, h int) {
	if h <= int(n.height) {
		return
	}
	n.height = int32(h)
	if n.is(flagDirty) {
		g.dirty.push(n) // queued again at its new height; the old entry is skipped
	}
	for _, d := range n.Dependents() {
		g.raise(d, h+1)
	}
}

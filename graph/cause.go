package graph

import "math/bits"

// What made a node recompute: a node keeps which of its inputs had changed
// when it last recomputed, so explain can follow a file back to its input.

// noteCause records which inputs of n changed in this stabilization: as a
// mask over n's inputs when they are 64 or fewer (no allocation), else as
// keys, reusing n's last list when it is the same. A node that had no cause
// and whose inputs did not change keeps none.
func (g *Graph) noteCause(n *Node) {
	run := uint32(g.run) // as a node keeps it (see Node.changedRun)
	if len(n.Inputs()) <= 64 {
		var mask uint64
		for i, in := range n.Inputs() {
			if in.changedRun == run {
				mask |= 1 << i
			}
		}
		if mask == 0 && n.flags&(flagCauseBits|flagCauseKept) == 0 {
			return
		}
		if n.is(flagCauseKept) {
			delete(g.causes, n)
			n.mark(flagCauseKept, false)
		}
		n.causeMask = mask
		n.mark(flagCauseBits, true)
		return
	}
	old := g.Cause(n)
	same, count := true, 0
	for _, in := range n.Inputs() {
		if in.changedRun == run {
			if count >= len(old) || old[count] != in.Key() {
				same = false
			}
			count++
		}
	}
	if same && count == len(old) {
		if old != nil && n.is(flagCauseBits) {
			g.keepCause(n, old)
		}
		return
	}
	cause := make([]Key, 0, count)
	for _, in := range n.Inputs() {
		if in.changedRun == run {
			cause = append(cause, in.Key())
		}
	}
	g.keepCause(n, cause)
}

// keepCause holds n's cause as keys, in the causes map.
func (g *Graph) keepCause(n *Node, cause []Key) {
	g.causes[n] = cause
	n.causeMask = 0
	n.mark(flagCauseKept, true)
	n.mark(flagCauseBits, false)
}

// Cause names the inputs of n that had changed when it last recomputed (nil
// before its first change).
func (g *Graph) Cause(n *Node) []Key {
	switch {
	case n.is(flagCauseBits):
		out := make([]Key, 0, bits.OnesCount64(n.causeMask))
		for i, in := range n.Inputs() {
			if n.causeMask&(1<<i) != 0 {
				out = append(out, in.Key())
			}
		}
		return out
	case n.is(flagCauseKept):
		return g.causes[n]
	}
	return nil
}

package graph

import (
	"bytes"
	"fmt"
	"reflect"
	"sync/atomic"
)

// Counters are what the engine keeps of its own work. They may be read from
// any goroutine.
type Counters struct {
	Stabilizations atomic.Uint64
	Recomputed     atomic.Uint64 // nodes whose compute ran (or whose state was derived again)
	Changed        atomic.Uint64 // nodes whose state, reason or value changed
	Cutoffs        atomic.Uint64 // recomputed nodes whose result equalled the old one
}

// Counters returns the engine's counters.
func (g *Graph) Counters() *Counters { return &g.counters }

// Stabilize recomputes every dirty node in height order, stopping at nodes
// whose new result equals the old one, and returns the nodes that changed
// (inputs set since the last Stabilize included), in height order.
func (g *Graph) Stabilize() []*Node {
	g.stabilizing = true
	defer func() { g.stabilizing = false }()
	g.run++
	g.now = g.Now().UnixNano()
	defer func() { g.now = 0 }()
	g.counters.Stabilizations.Add(1)
	var changed []*Node
	for _, n := range g.leavesChanged {
		n.mark(flagPending, false)
		if !n.is(flagRemoved) {
			changed = append(changed, n)
		}
	}
	g.leavesChanged = g.leavesChanged[:0]
	popped := 0
	for {
		n := g.dirty.pop()
		if n == nil {
			break
		}
		popped++
		if n.flags&(flagDirty|flagRemoved) != flagDirty {
			continue
		}
		n.mark(flagDirty, false)
		if g.recompute(n) {
			changed = append(changed, n)
			for _, d := range n.Dependents() {
				g.markDirty(d)
			}
		}
	}
	switch {
	case popped > keepQueued:
		g.grown = true
	case g.grown: // the first small one after a large one
		g.dirty.trim()
		if cap(g.leavesChanged) > keepQueued {
			g.leavesChanged = nil
		}
		g.grown = false
	}
	return changed
}

// keepQueued is the most queued nodes whose room the queues keep once
// stabilizations are small again: a cold start queues every node at once
// (117k at 10k files, 1 MB of arrays otherwise kept for good), the changes
// after it a few. Large stabilizations one after another keep their room.
const keepQueued = 4096

// recompute computes n again and says whether its result changed.
func (g *Graph) recompute(n *Node) bool {
	g.counters.Recomputed.Add(1)
	s, v, why, own := g.evaluate(n)
	if s == n.state && why == n.Why() && (s != Ready || Equal(n.result, v)) {
		n.mark(flagOwn, own)
		g.counters.Cutoffs.Add(1)
		return false
	}
	g.record(n, s, v, why, own)
	g.noteCause(n)
	n.changedRun = uint32(g.run)
	g.counters.Changed.Add(1)
	return true
}

// evaluate gives n's new state: a cycle fails it unless it is tolerant;
// unless tolerant, a failed input fails it and a waiting input makes it
// wait; else its compute runs. A tolerant node on a refused cycle computes
// over the inputs it has (the refused edge is none of them; a node of the
// cycle it reads is failed), so what reads it and is not on the cycle is
// not failed by it: a collection is the items not on its cycle.
func (g *Graph) evaluate(n *Node) (State, any, string, bool) {
	if c := g.onCycle[n]; c != nil && !n.is(flagTolerant) {
		return Failed, nil, c.Error(), true
	}
	if !n.is(flagTolerant) {
		var waitOn *Node
		for _, in := range n.Inputs() {
			switch in.state {
			case Failed:
				return Failed, nil, "input " + in.Key().String() + " failed", false
			case Waiting:
				if waitOn == nil {
					waitOn = in
				}
			}
		}
		if waitOn != nil {
			return Waiting, nil, "waits for " + waitOn.Key().String(), false
		}
	}
	v, err := g.call(n)
	if err != nil {
		if w, ok := err.(*WaitError); ok {
			return Waiting, nil, w.Why, true
		}
		return Failed, nil, err.Error(), true
	}
	return Ready, v, "", true
}

func (g *Graph) call(n *Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if n.is(flagSecret) {
				err = fmt.Errorf("panic in compute of %s (detail withheld: secret node)", n.Key())
			} else {
				err = fmt.Errorf("panic in compute of %s: %v", n.Key(), r)
			}
		}
	}()
	return n.compute(In{n})
}

// Equal is the engine's cutoff: byte slices by their bytes, a type with an
// Equal(any) bool method by that method, anything else by reflect.DeepEqual.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case interface{ Equal(any) bool }:
		return x.Equal(b)
	}
	return reflect.DeepEqual(a, b)
}

// heightQueue holds dirty nodes in buckets by height.
type heightQueue struct {
	buckets [][]*Node
	min     int
	n       int
}

func (q *heightQueue) push(n *Node) {
	h := int(n.height)
	for len(q.buckets) <= h {
		q.buckets = append(q.buckets, nil)
	}
	q.buckets[h] = append(q.buckets[h], n)
	if q.n == 0 || h < q.min {
		q.min = h
	}
	q.n++
}

// trim lets go of the room of buckets grown past keepQueued (the queue is
// empty).
func (q *heightQueue) trim() {
	for i, b := range q.buckets {
		if cap(b) > keepQueued {
			q.buckets[i] = nil
		}
	}
}

func (q *heightQueue) pop() *Node {
	for q.n > 0 {
		b := q.buckets[q.min]
		if len(b) == 0 {
			q.min++
			continue
		}
		n := b[len(b)-1]
		b[len(b)-1] = nil
		q.buckets[q.min] = b[:len(b)-1]
		q.n--
		if int(n.height) != q.min { // queued again at a new height: skip the stale entry
			continue
		}
		return n
	}
	q.min = 0
	return nil
}

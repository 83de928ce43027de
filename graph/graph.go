package graph

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Graph holds the nodes. It is not safe for concurrent use: one goroutine
// owns it (inputs send that goroutine batches); only Counters may be read
// from others.
type Graph struct {
	index keyIndex
	// byID[id] is the node numbered id (nil: none; 0 is never a node's);
	// free are the numbers of removed nodes, given again to new ones.
	byID []*Node
	free []int32

	dirty         heightQueue
	cycles        map[*Node]*CycleError // by the node whose input edge was refused
	onCycle       map[*Node]*CycleError // every node on a refused cycle
	refused       map[*Node][]*Node     // refused input edges, retried on rewiring
	causes        map[*Node][]Key       // causes not held as a node's causeMask
	run           uint64
	counters      Counters
	stabilizing   bool
	leavesChanged []*Node
	grown         bool  // the last stabilization grew the queues past keepQueued
	now           int64 // the time of the running stabilization (unix ns), 0 outside one

	// Now is the clock; tests may replace it.
	Now func() time.Time
}

// New makes an empty graph.
func New() *Graph {
	return &Graph{
		index:   newKeyIndex(),
		byID:    []*Node{nil},
		cycles:  make(map[*Node]*CycleError),
		onCycle: make(map[*Node]*CycleError),
		refused: make(map[*Node][]*Node),
		causes:  make(map[*Node][]Key),
		Now:     time.Now,
	}
}

// Node returns the node with key k, or nil.
func (g *Graph) Node(k Key) *Node {
	kind, ok := kindNumber(k.Kind, false)
	if !ok {
		return nil // a kind no node ever had
	}
	return g.index.lookup(kind, k.Name, g.byID)
}

// byNumber is the node whose ID is id, or nil.
func (g *Graph) byNumber(id int64) *Node {
	if id <= 0 || id >= int64(len(g.byID)) {
		return nil
	}
	return g.byID[id]
}

// Len is the number of nodes.
func (g *Graph) Len() int { return g.index.live }

// Nodes returns every node, sorted by key.
func (g *Graph) Nodes() []*Node {
	out := make([]*Node, 0, g.Len())
	g.Range(func(n *Node) { out = append(out, n) })
	sortNodes(out)
	return out
}

// Range calls fn for every node, in no set order (cheaper than Nodes).
func (g *Graph) Range(fn func(*Node)) {
	for _, n := range g.byID {
		if n != nil {
			fn(n)
		}
	}
}

func sortNodes(ns []*Node) {
	sort.Slice(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if a.kind != b.kind {
			return kindName(a.kind) < kindName(b.kind)
		}
		return a.name < b.name
	})
}

// Input adds an input leaf, waiting "not set yet" until set. Adding a key
// that exists returns the existing node when it is an input, else an error.
func (g *Graph) Input(k Key) (*Node, error) {
	if n := g.Node(k); n != nil {
		if n.compute != nil {
			return nil, fmt.Errorf("graph: %s exists and is not an input", k)
		}
		return n, nil
	}
	n := g.add(k)
	n.result = "not set yet"
	n.mark(flagOwn, true)
	return n, nil
}

// Derived adds a node computed by f from inputs. It is computed at the next
// Stabilize. An input edge that would close a cycle is refused: the node is
// added, fails with the cycle named, and the error is returned.
func (g *Graph) Derived(k Key, f Compute, inputs ...*Node) (*Node, error) {
	if f == nil {
		return nil, fmt.Errorf("graph: %s: nil compute", k)
	}
	if g.Node(k) != nil {
		return nil, fmt.Errorf("graph: %s exists", k)
	}
	n := g.add(k)
	n.compute = f
	n.result = "not computed yet"
	n.mark(flagOwn, true)
	err := g.SetInputs(n, inputs...)
	g.markDirty(n)
	return n, err
}

func (g *Graph) add(k Key) *Node {
	kind, _ := kindNumber(k.Kind, true)
	var id int32
	if last := len(g.free) - 1; last >= 0 {
		id, g.free = g.free[last], g.free[:last]
	} else {
		if len(g.byID) > math.MaxInt32 {
			panic("graph: more than 2^31 nodes")
		}
		id = int32(len(g.byID))
		g.byID = append(g.byID, nil)
	}
	now := g.Now().UnixNano()
	n := &Node{kind: kind, name: k.Name, id: id, since: now, changedAt: now}
	g.byID[id] = n
	g.index.insert(n, g.byID)
	return n
}

// MarkSecret says n's value must never be shown.
func (g *Graph) MarkSecret(n *Node) { n.mark(flagSecret, true) }

// MarkTolerant lets n's compute run whatever its inputs' states; it reads
// them with In.State and decides itself.
func (g *Graph) MarkTolerant(n *Node) {
	n.mark(flagTolerant, true)
	g.markDirty(n)
}

// SetCompute replaces n's compute function; n recomputes at the next
// Stabilize.
func (g *Graph) SetCompute(n *Node, f Compute) {
	if n.compute == nil || f == nil {
		panic("graph: SetCompute on an input or with nil")
	}
	n.compute = f
	g.markDirty(n)
}

// Set makes input n ready with value v. A value equal to the current one
// (and n already ready) does nothing.
func (g *Graph) Set(n *Node, v any) { g.setLeaf(n, Ready, v, "") }

// SetWaiting makes input n wait, saying why.
func (g *Graph) SetWaiting(n *Node, why string) { g.setLeaf(n, Waiting, nil, why) }

// SetFailed makes input n fail, saying why.
func (g *Graph) SetFailed(n *Node, reason string) { g.setLeaf(n, Failed, nil, reason) }

func (g *Graph) setLeaf(n *Node, s State, v any, why string) {
	if n.compute != nil {
		panic(fmt.Sprintf("graph: %s is not an input", n.Key()))
	}
	if g.stabilizing {
		panic("graph: input set during Stabilize")
	}
	if n.is(flagRemoved) {
		return
	}
	if n.state == s && n.Why() == why && (s != Ready || Equal(n.result, v)) {
		return
	}
	g.record(n, s, v, why, true)
	if !n.is(flagPending) {
		n.mark(flagPending, true)
		g.leavesChanged = append(g.leavesChanged, n)
	}
	for _, d := range n.Dependents() {
		g.markDirty(d)
	}
}

// record stores a new state and stamps it. A ready state has no why (a
// node holds its value or its why, not both).
func (g *Graph) record(n *Node, s State, v any, why string, own bool) {
	now := g.now
	if now == 0 {
		now = g.Now().UnixNano()
	}
	if n.state != s || n.Why() != why {
		n.since = now
	}
	n.state, n.result = s, v
	n.mark(flagOwn, own)
	if s != Ready {
		n.result = why
	}
	n.changedAt = now
	n.changedRun = uint32(g.run + 1)
}

func (g *Graph) markDirty(n *Node) {
	if n.flags&(flagDirty|flagRemoved) != 0 {
		return
	}
	n.mark(flagDirty, true)
	g.dirty.push(n)
}

// Remove takes n out of the graph. A node that still has dependents is not
// removed (remove or rewire them first).
func (g *Graph) Remove(n *Node) error {
	if n.is(flagRemoved) {
		return nil
	}
	if deps := n.Dependents(); len(deps) > 0 {
		return fmt.Errorf("graph: %s still has %d dependents (first %s)", n.Key(), len(deps), deps[0].Key())
	}
	for _, in := range n.Inputs() {
		in.deps = listOf(removeNode(in.Dependents(), n))
	}
	n.inputs = nodeList{}
	n.mark(flagRemoved, true)
	g.index.remove(n)
	g.byID[n.id] = nil
	g.free = append(g.free, n.id)
	delete(g.refused, n)
	if n.is(flagCauseKept) {
		delete(g.causes, n)
	}
	n.mark(flagCauseBits|flagCauseKept, false) // a removed node keeps no cause
	g.clearCycle(n)
	return nil
}

// Removed says n was taken out of its graph.
func (n *Node) Removed() bool { return n.is(flagRemoved) }

func removeNode(ns []*Node, n *Node) []*Node {
	for i, x := range ns {
		if x == n {
			last := len(ns) - 1
			ns[i] = ns[last]
			ns[last] = nil
			return ns[:last]
		}
	}
	return ns
}

package graph

import "time"

// Compute computes a node's value from its inputs. Returning an error made by
// Wait makes the node wait; any other error fails it. Unless the node is
// tolerant, Compute runs only when every input is ready.
type Compute func(in In) (any, error)

// Node is one vertex of the graph. Its fields are read through methods; it
// is changed only through its Graph.
type Node struct {
	// Read and written by every stabilization that reaches the node: kept
	// together, first, so a recompute touches few cache lines.
	compute Compute // nil for an input leaf
	inputs  []*Node
	deps    []*Node // dependents
	// The value when Ready, else why the node waits or failed (a string):
	// a ready node has no why, a node not ready no value, and one field
	// for both keeps a Node at 160 bytes, not 176 (11.7 nodes a file).
	result     any
	changedRun uint64
	since      int64 // unix nanoseconds: when (state, why) last changed
	changedAt  int64 // unix nanoseconds: when state, why or value last changed
	height     int32 // with the id and the flags below, in one word (a graph holds 100k+ nodes)
	id         int32 // the node's number in its graph: its place in byID
	state      State
	own        bool // the non-ready state began here (not inherited from an input)
	dirty      bool
	secret     bool
	tolerant   bool
	removed    bool
	pending    bool   // an input set since the last Stabilize
	causeBits  bool   // the cause is causeMask over inputs
	causeKept  bool   // the cause is in its graph's causes map
	kind       uint16 // the key's kind, by its number in the kinds table

	name string // the key's name
	// The inputs that had changed when it last recomputed: bit i for
	// inputs[i] (a slice of keys per node was 24 bytes here and an array
	// elsewhere). Inputs rewired, or more than 64 of them, keep the keys in
	// the graph's causes map instead; neither flag set: no cause yet.
	causeMask uint64

	// Meta is the owner's own data, never read by the engine.
	Meta any
}

// Key is the node's unique name.
func (n *Node) Key() Key { return Key{Kind: kindName(n.kind), Name: n.name} }

// State is what the node knows of its value.
func (n *Node) State() State { return n.state }

// Value is the node's value; nil unless Ready.
func (n *Node) Value() any {
	if n.state != Ready {
		return nil
	}
	return n.result
}

// Why says what a waiting node waits for or why a failed node failed.
func (n *Node) Why() string {
	if n.state == Ready {
		return ""
	}
	why, _ := n.result.(string)
	return why
}

// Secret says the node's value must never be shown.
func (n *Node) Secret() bool { return n.secret }

// IsInput says the node is a leaf set from outside.
func (n *Node) IsInput() bool { return n.compute == nil }

// Height exceeds each input's height; inputs have height 0.
func (n *Node) Height() int { return int(n.height) }

// Since is when the node's state (and why) last changed.
func (n *Node) Since() time.Time { return time.Unix(0, n.since) }

// ChangedAt is when the node's state, why or value last changed.
func (n *Node) ChangedAt() time.Time { return time.Unix(0, n.changedAt) }

// Inputs are the nodes this node reads, in the order Compute sees them.
func (n *Node) Inputs() []*Node { return n.inputs }

// Dependents are the nodes that read this node, in no set order.
func (n *Node) Dependents() []*Node { return n.deps }

// ID is the node's number in its graph (stable for the node's life).
func (n *Node) ID() int64 { return int64(n.id) }

// String names the node and its state, never its value.
func (n *Node) String() string {
	if n.state == Ready {
		return n.Key().String() + " (ready)"
	}
	return n.Key().String() + " (" + n.state.String() + ": " + n.Why() + ")"
}

// In gives a compute function its node's inputs.
type In struct{ n *Node }

// Len is the number of inputs.
func (in In) Len() int { return len(in.n.inputs) }

// Value is input i's value (nil unless ready).
func (in In) Value(i int) any { return in.n.inputs[i].Value() }

// State is input i's state.
func (in In) State(i int) State { return in.n.inputs[i].state }

// Why is input i's reason when it is not ready.
func (in In) Why(i int) string { return in.n.inputs[i].Why() }

// Key is input i's key.
func (in In) Key(i int) Key { return in.n.inputs[i].Key() }

// Input is input i itself.
func (in In) Input(i int) *Node { return in.n.inputs[i] }

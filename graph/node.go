package graph

import "time"

// Compute computes a node's value from its inputs. Returning an error made by
// Wait makes the node wait; any other error fails it. Unless the node is
// tolerant, Compute runs only when every input is ready.
type Compute func(in In) (any, error)

// Node is one vertex of the graph. Its fields are read through methods; it
// is changed only through its Graph.
type Node struct {
	// 128 bytes, an allocation size class (a graph holds 100k+ nodes, 11.7
	// a file: each 16 bytes off is ~190 B a file), so two cache lines. The
	// first holds what a stabilization reads of a node's inputs and
	// dependents (state, value, flags, height, changedRun) and the node's
	// own edges; the second its compute, times, key name, cause and Meta.

	// height, id, changedRun, state, flags and kind fill 16 bytes.
	height int32 // above every input's; inputs are 0
	id     int32 // the node's number in its graph: its place in byID
	// changedRun is the stabilization (the low 32 bits of its run) in
	// which the node last changed; only noteCause reads it, to say which
	// inputs of a changed node changed in the same run. It wraps after
	// 2^32 stabilizations (over a year at 100 a second): a node last
	// changed a multiple of 2^32 runs before the running one (or never
	// changed, in run 2^32, 2·2^32, ...) then looks changed in it, and a
	// dependent that changes in that run names it in its cause too. Only
	// the cause that explain shows can be wrong, never a value or a state:
	// nothing else reads changedRun.
	changedRun uint32
	state      State
	flags      flags
	kind       uint16   // the key's kind, by its number in the kinds table
	inputs     nodeList // a []*Node in 16 bytes
	deps       nodeList // dependents, likewise
	// The value when Ready, else why the node waits or failed (a string):
	// a ready node has no why, a node not ready no value, and one field
	// for both saves 16 bytes a node.
	result any

	compute   Compute // nil for an input leaf
	since     int64   // unix nanoseconds: when (state, why) last changed
	changedAt int64   // unix nanoseconds: when state, why or value last changed
	name      string  // the key's name
	// The inputs that had changed when it last recomputed: bit i for
	// inputs[i] (a slice of keys per node was 24 bytes here and an array
	// elsewhere). Inputs rewired, or more than 64 of them, keep the keys in
	// the graph's causes map instead; neither flag set: no cause yet.
	causeMask uint64

	// Meta is the owner's own data, never read by the engine.
	Meta any
}

// flags are a node's yes-or-no facts, one bit each, in one byte (eight
// bools took eight, and a Node's 16-byte word of small fields had no room
// for them).
type flags uint8

const (
	flagOwn       flags = 1 << iota // the non-ready state began here (not inherited from an input)
	flagDirty                       // queued to recompute
	flagSecret                      // the value must never be shown
	flagTolerant                    // compute runs whatever the inputs' states
	flagRemoved                     // taken out of its graph
	flagPending                     // an input set since the last Stabilize
	flagCauseBits                   // the cause is causeMask over inputs
	flagCauseKept                   // the cause is in its graph's causes map
)

// is says every flag in f is set.
func (n *Node) is(f flags) bool { return n.flags&f == f }

// mark sets the flags in f, or clears them when on is false.
func (n *Node) mark(f flags, on bool) {
	if on {
		n.flags |= f
	} else {
		n.flags &^= f
	}
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
func (n *Node) Secret() bool { return n.is(flagSecret) }

// Root says the node waits or fails for a why of its own (a leaf set so,
// or a compute that said so), not one inherited from an input.
func (n *Node) Root() bool { return n.state != Ready && n.is(flagOwn) }

// IsInput says the node is a leaf set from outside.
func (n *Node) IsInput() bool { return n.compute == nil }

// Height exceeds each input's height; inputs have height 0.
func (n *Node) Height() int { return int(n.height) }

// Since is when the node's state (and why) last changed.
func (n *Node) Since() time.Time { return time.Unix(0, n.since) }

// ChangedAt is when the node's state, why or value last changed.
func (n *Node) ChangedAt() time.Time { return time.Unix(0, n.changedAt) }

// Inputs are the nodes this node reads, in the order Compute sees them.
func (n *Node) Inputs() []*Node { return n.inputs.slice() }

// Dependents are the nodes that read this node, in no set order.
func (n *Node) Dependents() []*Node { return n.deps.slice() }

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

// InOf is n's inputs as its compute sees them, for its owner to read them
// outside a compute (a value it keeps only a sum of, made again on
// demand). What they hold is what n's value was computed from only while
// the graph is stable: nothing set since the last Stabilize.
func InOf(n *Node) In { return In{n} }

// Node is the node whose inputs these are (the one computing).
func (in In) Node() *Node { return in.n }

// Len is the number of inputs.
func (in In) Len() int { return len(in.n.Inputs()) }

// Value is input i's value (nil unless ready).
func (in In) Value(i int) any { return in.n.Inputs()[i].Value() }

// State is input i's state.
func (in In) State(i int) State { return in.n.Inputs()[i].state }

// Why is input i's reason when it is not ready.
func (in In) Why(i int) string { return in.n.Inputs()[i].Why() }

// Key is input i's key.
func (in In) Key(i int) Key { return in.n.Inputs()[i].Key() }

// Input is input i itself.
func (in In) Input(i int) *Node { return in.n.Inputs()[i] }

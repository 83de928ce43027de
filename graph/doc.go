// Package graph is an incremental computation engine: a DAG of nodes whose
// leaves are inputs set from outside in batches and whose other nodes compute
// a value from their inputs. Stabilize recomputes only what a batch made
// dirty, in height order, and stops at a node whose new value equals its old
// one (cutoff); it returns the nodes that changed, so outputs act on those
// alone.
//
// Words: an input of a node is a node it reads; a dependent is a node that
// reads it. Edges run input → dependent. A node's height exceeds each of its
// inputs' heights, so recomputing by rising height computes every input
// before its dependents.
//
// Each node is Ready (with a value), Waiting (with why) or Failed (with a
// reason). A node whose input waits, waits; failed dominates waiting; a
// non-ready node names its root causes, the nodes where the state began.
// Every node remembers when it last changed and which inputs made it
// recompute, so Explain can follow a file back to the leaf that moved.
//
// The engine never prints a value: Explain, DOT, errors and String() show
// keys, states and reasons only, and a node marked secret is named, never
// shown. A Graph is owned by one goroutine; only Counters may be read from
// others. It imports nothing of the project.
package graph

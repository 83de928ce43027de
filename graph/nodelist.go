package graph

import (
	"math"
	"unsafe"
)

// nodeList is a []*Node in 16 bytes, not a slice's 24: the address of its
// first element and its length and capacity in 32 bits each. A node holds
// two (its inputs and its dependents), and the 16 bytes they save take a
// Node from 144 bytes to 128, a size class down (a graph holds 100k+
// nodes). The address keeps the whole array alive for the collector, as a
// slice's does; slice gives back the very slice that was stored (nil or
// empty alike), so nothing but the size changes.
type nodeList struct {
	first    **Node
	len, cap uint32
}

// listOf holds s. Lengths stay far below 2^32: a graph has fewer than 2^31
// nodes, and a list longer than 2^32 would be 32 GB of pointers.
func listOf(s []*Node) nodeList {
	if cap(s) > math.MaxUint32 {
		panic("graph: a node list of more than 2^32 nodes")
	}
	return nodeList{first: unsafe.SliceData(s), len: uint32(len(s)), cap: uint32(cap(s))}
}

// slice is the slice listOf was given.
func (l nodeList) slice() []*Node { return unsafe.Slice(l.first, l.cap)[:l.len] }

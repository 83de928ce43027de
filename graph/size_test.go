package graph

import (
	"testing"
	"unsafe"
)

// A graph holds 100k+ nodes: a node of more than 144 bytes (an allocation
// size class) costs 16 bytes more each.
func TestNodeSize(t *testing.T) {
	if s := unsafe.Sizeof(Node{}); s > 144 {
		t.Errorf("a Node is %d bytes, over 144", s)
	}
}

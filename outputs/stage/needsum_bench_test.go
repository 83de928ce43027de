package stage

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

func BenchmarkNeedsSum(b *testing.B) {
	needs := make([]nodes.NeedView, 1000)
	for i := range needs {
		needs[i] = nodes.NeedView{Kind: "config", Name: fmt.Sprintf("mod%03d.key%04d", i%100, i), State: graph.Ready}
	}
	seed := maphash.MakeSeed()
	b.ReportAllocs()
	for b.Loop() {
		needsSum(seed, needs)
	}
}

package nodes

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
)

// BenchmarkSumNeeds: a module of 100 files has up to a thousand needs,
// summed on every change of one of its values.
func BenchmarkSumNeeds(b *testing.B) {
	needs := make([]NeedView, 1000)
	for i := range needs {
		needs[i] = NeedView{Kind: "config", Name: fmt.Sprintf("mod%03d.key%04d", i%100, i), State: graph.Ready}
	}
	seed := maphash.MakeSeed()
	b.ReportAllocs()
	for b.Loop() {
		SumNeeds(seed, needs)
	}
}

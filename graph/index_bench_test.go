package graph

import (
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// indexKeys are n keys shaped like the provisioner's: three kinds, names
// like node-000.mod-012.key-0042.
func indexKeys(n int) []Key {
	kinds := []string{"config", "need", "file"}
	ks := make([]Key, n)
	for i := range ks {
		j := i / len(kinds)
		ks[i] = Key{kinds[i%len(kinds)], fmt.Sprintf("node-%03d.mod-%03d.key-%04d", j/10_000, j/100%100, j%100)}
	}
	return ks
}

// BenchmarkIndexBytes reports what the key index costs a node: the heap a
// graph of input nodes holds, less its node structs (a Node's size is a
// size class: size_test.go) and byID; and all of that heap a node. 117,122 is
// the graph of the client's 10k files (docs/PERFORMANCE.md).
func BenchmarkIndexBytes(b *testing.B) {
	for _, n := range []int{100_000, 117_122} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			ks := indexKeys(n)
			var perNode, all float64
			for i := 0; i < b.N; i++ {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				g := New()
				for _, k := range ks {
					if _, err := g.Input(k); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				held := after.HeapAlloc - before.HeapAlloc
				rest := uint64(n)*uint64(unsafe.Sizeof(Node{})) + uint64(cap(g.byID))*8
				perNode = float64(held-rest) / float64(n)
				all = float64(held) / float64(n)
				runtime.KeepAlive(g)
			}
			b.ReportMetric(perNode, "index-B/node")
			b.ReportMetric(all, "graph-B/node")
		})
	}
}

// BenchmarkGraphNode looks up the keys of a graph in a random order: 1k
// nodes (the index in the cache: its CPU cost) and 100k (its memory
// latency). read also reads the node found, as the graph's callers do: a
// map holding the key beside the pointer never read the node itself,
// the index must, to compare the key.
func BenchmarkGraphNode(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		ks := indexKeys(n)
		g := New()
		for _, k := range ks {
			g.Input(k)
		}
		rand.New(rand.NewSource(1)).Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		for i := range ks { // the callers' keys are their own strings
			ks[i].Name = strings.Clone(ks[i].Name)
		}
		for _, read := range []bool{false, true} {
			name := fmt.Sprintf("nodes=%d/lookup", n)
			if read {
				name = fmt.Sprintf("nodes=%d/read", n)
			}
			b.Run(name, func(b *testing.B) {
				var found int
				for i := 0; i < b.N; i++ {
					nd := g.Node(ks[i%n])
					if read {
						found += int(nd.State()) + 1
					} else if nd != nil {
						found++
					}
				}
				if found != b.N {
					b.Fatalf("found %d of %d", found, b.N)
				}
			})
		}
	}
}

package graph

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchGraph builds files × 5 placeholders; one placeholder in five reads a
// shared input, the others an input of their own.
func benchGraph(files int) (*Graph, []*Node, []*Node) {
	g := New()
	shared := make([]*Node, 50)
	for i := range shared {
		shared[i], _ = g.Input(Key{"config", fmt.Sprint("shared-", i)})
		g.Set(shared[i], "shared value")
	}
	var own []*Node
	fs := make([]*Node, files)
	for f := 0; f < files; f++ {
		phs := make([]*Node, 5)
		for p := range phs {
			var in *Node
			if p == 0 {
				in = shared[f%len(shared)]
			} else {
				in, _ = g.Input(Key{"config", fmt.Sprint(f, "-", p)})
				g.Set(in, "value of its own")
				own = append(own, in)
			}
			phs[p], _ = g.Derived(Key{"ph", fmt.Sprint(f, "-", p)}, passThrough, in)
		}
		fs[f], _ = g.Derived(Key{"file", fmt.Sprint(f)}, render, phs...)
	}
	g.Stabilize()
	return g, fs, own
}

func passThrough(in In) (any, error) { return in.Value(0), nil }

func render(in In) (any, error) {
	var b strings.Builder
	b.WriteString("# rendered\n")
	for i := 0; i < in.Len(); i++ {
		b.WriteString("key = ")
		b.WriteString(in.Value(i).(string))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// fullRender is the consul-template way: every file rendered again.
func fullRender(fs []*Node) {
	for _, f := range fs {
		_, _ = render(In{f})
	}
}

func BenchmarkOneChange(b *testing.B) {
	for _, files := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			g, fs, own := benchGraph(files)
			rec0 := g.Counters().Recomputed.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.Set(own[i%len(own)], fmt.Sprint("v", i))
				g.Stabilize()
			}
			b.StopTimer()
			perChange := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			const reps = 3
			start := time.Now()
			for r := 0; r < reps; r++ {
				fullRender(fs)
			}
			full := float64(time.Since(start).Nanoseconds()) / reps
			b.ReportMetric(float64(g.Counters().Recomputed.Load()-rec0)/float64(b.N), "nodes/change")
			b.ReportMetric(full, "full-rerender-ns")
			b.ReportMetric(full/perChange, "x-cheaper")
		})
	}
}

func BenchmarkEmptyStabilize(b *testing.B) {
	g, _, _ := benchGraph(10_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Stabilize()
	}
}

// BenchmarkPerNodeRecompute: a chain of placeholders all recomputed, so the
// engine's own cost per recomputed node shows (compute is a pass-through).
func BenchmarkPerNodeRecompute(b *testing.B) {
	g := New()
	in, _ := g.Input(Key{"in", "root"})
	const width = 10_000
	for i := 0; i < width; i++ {
		g.Derived(Key{"ph", fmt.Sprint(i)}, passThrough, in)
	}
	g.Set(in, "x")
	g.Stabilize()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g.Set(in, i)
		g.Stabilize()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/width, "ns/node")
}

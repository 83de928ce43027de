package report

import (
	"context"
	"fmt"
	"testing"
)

// benchNeeds is a module's needs as at 10k files: ~530 a module.
func benchNeeds(module string, n int) []Need {
	out := make([]Need, n)
	for i := range out {
		out[i] = Need{Node: "n1", Module: module, Kind: "config", Name: fmt.Sprintf("key-%04d", i), State: "met"}
	}
	return out
}

// syncedNeeds is a bus whose module web has its 530 needs written, the
// timer reset after it.
func syncedNeeds(b *testing.B) (*bus, []Need) {
	bus := newBus(b, needsBucket)
	needs := benchNeeds("web", 530)
	if err := bus.pub.Needs(context.Background(), "web", needs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	return bus, needs
}

// One need of a 530-need module moves (waiting ↔ met) at each iteration:
// the path a change that moves a need takes.
func BenchmarkNeedsOneMoved(b *testing.B) {
	bus, needs := syncedNeeds(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		n := &needs[i%len(needs)]
		if n.State == "met" {
			n.State, n.Why = "waiting", "no value yet"
		} else {
			n.State, n.Why = "met", ""
		}
		if err := bus.pub.Needs(ctx, "web", needs); err != nil {
			b.Fatal(err)
		}
	}
}

// The same needs again (a change that moves none of a module's needs).
func BenchmarkNeedsUnchanged(b *testing.B) {
	bus, needs := syncedNeeds(b)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if err := bus.pub.Needs(ctx, "web", needs); err != nil {
			b.Fatal(err)
		}
	}
}

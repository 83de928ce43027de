package graph

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// A random graph of inputs → placeholders → files, changed by random batches
// (values, waiting, rewired files): after every stabilization each file's
// state and bytes equal a computation from scratch, and the nodes reported
// changed are exactly the files whose result changed.
func TestStabilizeEqualsRecomputingFromScratch(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = f.Value.Set("10000")
	}
	rapid.Check(t, func(rt *rapid.T) {
		g := New()
		nIn := rapid.IntRange(1, 6).Draw(rt, "inputs")
		nPh := rapid.IntRange(1, 8).Draw(rt, "placeholders")
		nFile := rapid.IntRange(1, 8).Draw(rt, "files")
		ins := make([]*Node, nIn)
		for i := range ins {
			ins[i], _ = g.Input(Key{"in", fmt.Sprint(i)})
		}
		// A placeholder reads one input and keeps only its first letter, so
		// many changes are cut off; some read another placeholder too.
		phs := make([]*Node, nPh)
		for i := range phs {
			srcs := []*Node{ins[rapid.IntRange(0, nIn-1).Draw(rt, "src")]}
			if i > 0 && rapid.Bool().Draw(rt, "chain") {
				srcs = append(srcs, phs[rapid.IntRange(0, i-1).Draw(rt, "prev")])
			}
			phs[i], _ = g.Derived(Key{"ph", fmt.Sprint(i)}, firstLetters, srcs...)
		}
		pick := func(label string) []*Node {
			k := rapid.IntRange(0, 4).Draw(rt, label+"n")
			var out []*Node
			for j := 0; j < k; j++ {
				out = append(out, phs[rapid.IntRange(0, nPh-1).Draw(rt, label)])
			}
			return out
		}
		files := make([]*Node, nFile)
		for i := range files {
			files[i], _ = g.Derived(Key{"file", fmt.Sprint(i)}, concat, pick("f")...)
		}
		prev := map[*Node]string{}
		snapshot := func(n *Node) string { return n.State().String() + "|" + n.Why() + "|" + fmt.Sprint(n.Value()) }
		for batch := 0; batch < rapid.IntRange(1, 6).Draw(rt, "batches"); batch++ {
			for c := rapid.IntRange(1, 4).Draw(rt, "changes"); c > 0; c-- {
				in := ins[rapid.IntRange(0, nIn-1).Draw(rt, "which")]
				switch rapid.IntRange(0, 5).Draw(rt, "op") {
				case 0:
					g.SetWaiting(in, "not written yet")
				case 1:
					f := files[rapid.IntRange(0, nFile-1).Draw(rt, "rewire")]
					if err := g.SetInputs(f, pick("r")...); err != nil {
						rt.Fatalf("rewire: %v", err)
					}
				default:
					g.Set(in, rapid.SampledFrom([]string{"apple", "avocado", "banana", "cherry"}).Draw(rt, "v"))
				}
			}
			changed := map[*Node]bool{}
			for _, n := range g.Stabilize() {
				changed[n] = true
			}
			for _, f := range files {
				want := fromScratch(f)
				if got := snapshot(f); got != want {
					rt.Fatalf("%s: engine %q, from scratch %q", f.Key(), got, want)
				}
				if was, ok := prev[f]; ok && (was != want) != changed[f] {
					rt.Fatalf("%s reported changed=%v, but %q → %q", f.Key(), changed[f], was, want)
				}
				prev[f] = want
			}
			checkHeights(rt, g)
		}
	})
}

func firstLetters(in In) (any, error) {
	var b strings.Builder
	for i := 0; i < in.Len(); i++ {
		b.WriteByte(in.Value(i).(string)[0])
	}
	return b.String(), nil
}

// fromScratch evaluates n recursively, ignoring every stored result.
func fromScratch(n *Node) string {
	type res struct {
		s   State
		v   string
		why string
	}
	var eval func(*Node) res
	eval = func(m *Node) res {
		if m.IsInput() {
			if m.State() != Ready {
				return res{m.State(), "", m.Why()}
			}
			return res{Ready, m.Value().(string), ""}
		}
		vals := make([]string, len(m.Inputs()))
		for i, in := range m.Inputs() {
			r := eval(in)
			if r.s != Ready {
				return res{Waiting, "", "waits for " + in.Key().String()}
			}
			vals[i] = r.v
		}
		if m.Key().Kind == "ph" {
			var b strings.Builder
			for _, v := range vals {
				b.WriteByte(v[0])
			}
			return res{Ready, b.String(), ""}
		}
		return res{Ready, strings.Join(vals, ""), ""}
	}
	r := eval(n)
	if r.s != Ready {
		return r.s.String() + "|" + r.why + "|<nil>"
	}
	return "ready||" + r.v
}

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// BenchmarkBigMeshClient: a client whose node has 20 modules on a mesh of
// 2,000 nodes × 25 modules (50,000 assignments, each plan ~3 KB): every
// client reads every node's plans (SPEC §2.2) for the consumers of its
// providers (§4.5) and the offers it binds to (§4.6). Module n000-m0000
// here provides svc to its 20 neighbours and to module c01 of every other
// node. It measures the heap the client holds for the others' plans (and
// the most it held while reading them), the cold start, and the work of a
// change of another node's plan that binds nothing here (none should be
// done: no render, no fill, no report, no need written, no vault ask) and
// of one that binds a consumer of n000-m0000 (one vault ask, one file).
func BenchmarkBigMeshClient(b *testing.B) {
	others := 1999 // nodes besides node-000
	if n, err := strconv.Atoi(os.Getenv("BENCH_BIGMESH_OTHERS")); err == nil && n >= 2 {
		others = n // a smaller mesh, to compare
	}
	h := newBenchBus(b)
	m := h.generate(scale.Config{Nodes: 1, Modules: 20, Files: 5, Placeholders: 10, Contributors: 10, Consumers: 20})
	provider := scale.ModuleName(0, 0)
	h.load(m)
	foreign := map[string][]byte{}
	for n := 1; n <= others; n++ {
		node := scale.NodeName(n)
		for i := range 25 {
			mod := fmt.Sprintf("c%02d", i)
			foreign[spec.EncodeKey(node, mod)] = foreignPlan(node, mod, mod, provider, 0)
			if mod == "c01" {
				h.vault.Set(context.Background(), spec.PairSecretName(provider, scale.Provision, node, mod, ""), []byte("pair of "+node))
			}
		}
	}
	size := 0
	for _, v := range foreign {
		size += len(v)
	}
	b.ReportMetric(float64(size)/float64(len(foreign)), "B/plan")
	h.putAll(spec.AssignmentsBucket, foreign)
	foreign = nil

	heap0 := heapInUse()
	// The process's peak RSS from here on: the embedded server's and the
	// publisher's included, so read against the RSS now (the 50,000
	// plans built to put are garbage by then, and given back).
	debug.FreeOSMemory()
	rss0, rssOK := resetPeakRSS(b)
	var peak atomic.Uint64
	stopPeak := make(chan struct{})
	// BENCH_PEAKHEAPPROFILE: a heap profile where the most was live, each
	// look a GC of its own (slower, and peak-heap-MiB is then the most
	// live rather than the most in use).
	peakProfile := os.Getenv("BENCH_PEAKHEAPPROFILE")
	go func() {
		for {
			var ms runtime.MemStats
			if peakProfile != "" {
				runtime.GC()
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				if peakProfile != "" {
					if f, err := os.Create(peakProfile); err == nil {
						pprof.WriteHeapProfile(f)
						f.Close()
					}
				}
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stopPeak:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	fills0 := h.fills.count()
	d, stop, cold, converged, _ := coldStart(h, m)
	close(stopPeak)
	h.fills.mu.Lock()
	providerFills := 0
	for _, r := range h.fills.reqs[fills0:] {
		if r.Module == provider {
			providerFills++
		}
	}
	h.fills.mu.Unlock()
	// A consumer whose credential has not come yet is left out (SPEC
	// §4.5): the provider's list is filled again as they come, in batches.
	b.ReportMetric(float64(providerFills), "cold-provider-fills")
	heap1 := heapInUse()
	if p := os.Getenv("BENCH_HEAPPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	b.ReportMetric(cold.Seconds(), "s-to-all-applied")
	b.ReportMetric(converged.Seconds(), "s-to-last-fill")
	b.ReportMetric(float64(heap1-heap0)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(peak.Load()-min(peak.Load(), heap0))/(1<<20), "peak-heap-MiB")
	if rssOK {
		hwm := float64(proctest.Status(b, os.Getpid(), "VmHWM"))
		b.ReportMetric((hwm-float64(rss0))/(1<<20), "peak-RSS-over-start-MiB")
	}

	work := func() (renders, fills, applied, needs, asks uint64, stab float64) {
		if err := d.Do(context.Background(), func(m *nodes.NodeGraph) {
			renders = m.Renders().Files.Load() + m.Renders().Items.Load()
		}); err != nil {
			b.Fatal(err)
		}
		h.mu.Lock()
		for _, n := range h.events {
			applied += uint64(n)
		}
		h.mu.Unlock()
		s, err := h.js.Stream(context.Background(), "KV_"+spec.NeedsBucket)
		if err != nil {
			b.Fatal(err)
		}
		info, _ := s.Info(context.Background())
		stab, _ = stabilizeSeconds(d)
		return renders, uint64(h.fills.count()), applied, info.State.LastSeq, uint64(len(h.vault.Asks())), stab
	}
	// marker binds node-001's c01 anew (its plan names the provider
	// again): the fill of n000-m0000's consumers file is the sign that
	// what was put before it on the assignments stream was read.
	version := 0
	marker := func() {
		version++
		node := scale.NodeName(1)
		unbind := foreignPlan(node, "c01", "c05", provider, version)
		rebind := foreignPlan(node, "c01", "c01", provider, version)
		for _, v := range [][]byte{unbind, rebind} {
			h.drain(20 * time.Millisecond)
			if _, err := h.js.Publish(context.Background(), "$KV."+spec.AssignmentsBucket+"."+spec.EncodeKey(node, "c01"), v); err != nil {
				b.Fatal(err)
			}
			h.nextFill(provider, 30*time.Second)
		}
		h.drain(100 * time.Millisecond)
	}
	marker()
	measure := func(name string, changes int, put func(i int)) {
		r0, f0, a0, n0, q0, s0 := work()
		start := time.Now()
		for i := range changes {
			put(i)
		}
		<-h.js.PublishAsyncComplete()
		marker()
		took := time.Since(start)
		r1, f1, a1, n1, q1, s1 := work()
		per := func(x, y uint64, less uint64) float64 { return float64(y-x-less) / float64(changes) }
		// The marker is two changes: 2 renders, 2 fills, 2 vault asks at
		// most (the credential is held after the first), reports and
		// needs as they come.
		b.ReportMetric(per(r0, r1, 2), name+"-renders/change")
		b.ReportMetric(per(f0, f1, 2), name+"-fills/change")
		b.ReportMetric(float64(a1-a0)/float64(changes), name+"-applied/change")
		b.ReportMetric(float64(n1-n0)/float64(changes), name+"-needs/change")
		b.ReportMetric(float64(q1-q0)/float64(changes), name+"-asks/change")
		b.ReportMetric((s1-s0)*1e6/float64(changes), name+"-stabilize-us/change")
		b.ReportMetric(float64(took.Microseconds())/float64(changes), name+"-wall-us/change")
	}
	const changes = 2000
	// Another node's plan changes what binds nothing here (a placement).
	if p := os.Getenv("BENCH_CPUPROFILE"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
	}
	measure("foreign", changes, func(i int) {
		node := scale.NodeName(2 + i%(others-1))
		if _, err := h.js.PublishAsync("$KV."+spec.AssignmentsBucket+"."+spec.EncodeKey(node, "c05"), foreignPlan(node, "c05", "c05", provider, i+1)); err != nil {
			b.Fatal(err)
		}
	})
	pprof.StopCPUProfile()
	// A consumer of n000-m0000 unbinds and binds again, one at a time.
	binds := 100
	measure("binding", binds, func(i int) {
		node := scale.NodeName(2 + i/2%(others-1))
		role := "c05"
		if i%2 == 1 {
			role = "c01"
		}
		h.drain(20 * time.Millisecond)
		if _, err := h.js.Publish(context.Background(), "$KV."+spec.AssignmentsBucket+"."+spec.EncodeKey(node, "c01"), foreignPlan(node, "c01", role, provider, i+1)); err != nil {
			b.Fatal(err)
		}
		h.nextFill(provider, 30*time.Second)
	})
	// The bus came back: every bucket read again (50,000 assignments as
	// they were), then every module filled whole. Timed from the news to
	// the last module's fill request.
	h.drain(100 * time.Millisecond)
	f0 := h.fills.count()
	start := time.Now()
	d.events <- reconnected{}
	bustest.EventuallyEvery(b, 3*time.Minute, 10*time.Millisecond, func() error {
		if n := h.fills.count() - f0; n < m.Config.Modules {
			return fmt.Errorf("%d fill requests since the bus came back, want %d", n, m.Config.Modules)
		}
		return nil
	})
	b.ReportMetric(time.Since(start).Seconds(), "s-reconnect-to-refilled")
	stop()
}

// foreignPlan is a plan of ~3 KB for mod on node, binding and offering as
// role says: c00 offers api (judged by its have), c01 consumes provider's
// svc, the others consume metrics' push.
func foreignPlan(node, mod, role, provider string, v int) []byte {
	p := nodes.Plan{Templates: nodes.TemplatesRef{Ref: "obj://mesh-artifacts/" + mod + ".tar.gz", Digest: "sha256:" + fmt.Sprintf("%064x", len(mod))},
		Placement: map[string]map[string]string{}, Secrets: []nodes.SecretSpec{{Name: "s0"}}}
	for f := range 8 {
		p.Files = append(p.Files, nodes.FileSpec{Path: fmt.Sprintf("/etc/%s/conf-%d.toml", mod, f), Template: "t",
			Owner: mod, Group: mod, Mode: "0640", Form: nodes.FormOwned, OnChange: nodes.OnChange{Action: "restart", Unit: mod + ".service"}})
	}
	for _, k := range []string{"dir", "port", "access", "seat", "machine"} {
		p.Placement[k] = map[string]string{}
		for j := range 4 {
			p.Placement[k][fmt.Sprint("a", j)] = fmt.Sprintf("%s-%s-%s-%d-v%d", k, node, mod, j, v)
		}
	}
	switch role {
	case "c00":
		p.Provides = []nodes.Offer{{Provision: "api", Have: map[string]string{"url": "https://agent.mesh"}}, {Provision: "admin", AnsweredBy: nodes.AnsweredByHelper}}
	case "c01":
		p.Provisions = []nodes.ProvisionSpec{{Provision: scale.Provision, Provider: provider, Credential: "token"}}
	default:
		p.Provisions = []nodes.ProvisionSpec{{Provision: "push", Provider: "metrics", Credential: "token"}}
	}
	data, _ := json.Marshal(nodes.Assignment{Node: node, Module: mod, Provisioning: p})
	return data
}

// resetPeakRSS sets this process's peak RSS (VmHWM) back to its RSS now
// (Linux: "5" to /proc/self/clear_refs) and says what that is; ok false
// where it cannot.
func resetPeakRSS(b testing.TB) (rss int64, ok bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return proctest.Status(b, os.Getpid(), "VmRSS"), true
}

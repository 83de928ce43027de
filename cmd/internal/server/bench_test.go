package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// BenchmarkSweep100kNeeds sweeps a mesh of 100 nodes × 100 modules × 10
// needs (100,000 need keys, 10,000 assignments and reports) through the
// verb, all pages joined. Per module: 8 needs met, one bound need waiting
// with a why of its own (10,000 findings: the reply is paged; a why that
// differs only by the need's own key would group into one), and on
// every tenth module one failed need shared across the mesh. It says when
// the fastest of three sweeps takes over 2 s (the target), and reports the
// peak heap of the process (the server's and the embedded bus's) meanwhile.
func BenchmarkSweep100kNeeds(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nc, js := plant100k(b, ctx)
	stop, err := ServeQuery(ctx, nc, js, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer stop()

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var (
		mu         sync.Mutex
		peak       uint64
		best, slow time.Duration
	)
	// Each iteration sweeps three times: the machine is shared, and the
	// best of three says what the sweep costs, the slowest what a busy
	// machine made of it.
	b.ResetTimer()
	for b.Loop() {
		for range 3 {
			took := sweepOnce(b, ctx, nc, &mu, &peak)
			slow = max(slow, took)
			if best == 0 || took < best {
				best = took
			}
		}
	}
	b.StopTimer()
	if best > 2*time.Second { // said, not failed: a shared machine's load moves it (docs/PERFORMANCE.md)
		b.Logf("the fastest of three sweeps of 100,000 needs took %s: over the 2 s target", best)
	}
	b.ReportMetric(best.Seconds(), "s/sweep-best")
	b.ReportMetric(slow.Seconds(), "s/sweep-worst")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base.HeapAlloc)/(1<<20), "idle-heap-MiB")
}

// sweepOnce asks for a whole-mesh sweep and checks it, sampling the heap
// of the process (the server's, and the embedded bus's) meanwhile.
func sweepOnce(b *testing.B, ctx context.Context, nc *nats.Conn, mu *sync.Mutex, peak *uint64) time.Duration {
	const nodesN, modulesN = 100, 100
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			mu.Lock()
			*peak = max(*peak, ms.HeapAlloc)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	r, err := AskSweep(ctx, nc, "", "", "")
	took := time.Since(start)
	close(done)
	<-sampled
	if err != nil {
		b.Fatal(err)
	}
	n := r.Summary.Needs
	if n.Met+n.Waiting+n.StoodAsked+n.Failed != nodesN*modulesN*10 || len(r.Findings) != nodesN*modulesN+1 || n.Failed != nodesN*modulesN/10 {
		b.Fatalf("summary %+v, %d findings", r.Summary, len(r.Findings))
	}
	return took
}

// plant100k fills a bus with the mesh BenchmarkSweep100kNeeds sweeps.
func plant100k(b *testing.B, ctx context.Context) (*nats.Conn, jetstream.JetStream) {
	const nodesN, modulesN = 100, 100
	s := bustest.Start(b)
	nc, js := bustest.JetStream(b, s)
	if err := EnsureBuckets(ctx, js, 1); err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket}); err != nil {
		b.Fatal(err)
	}
	kv, _ := js.KeyValue(ctx, spec.RegistryBucket)
	if _, _, err := PublishRegistry(ctx, kv, Registry()); err != nil {
		b.Fatal(err)
	}
	ajs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	put := func(bucket, key, v string) {
		for try := 0; ; try++ {
			_, err := ajs.PublishAsync("$KV."+bucket+"."+key, []byte(v))
			if err == nil {
				return
			}
			if try == 3 {
				b.Fatal(err)
			}
			<-ajs.PublishAsyncComplete() // stalled: let the acks catch up
		}
	}
	plan := `{"node":"%s","module":"%s","provisioning":{"provisions":[{"name":"t","provision":"gitea-read","provider":"gitea","credential":"token"}]}}`
	for n := range nodesN {
		node := fmt.Sprintf("node-%03d", n)
		for m := range modulesN {
			mod := fmt.Sprintf("module-%03d", m)
			put(spec.AssignmentsBucket, node+"."+mod, fmt.Sprintf(plan, node, mod))
			put(spec.AppliedBucket, node+"."+mod, fmt.Sprintf(`{"node":%q,"module":%q,"state":"waiting","at":"2026-12-01T00:00:00Z"}`, node, mod))
			for k := range 8 {
				put(spec.NeedsBucket, fmt.Sprintf("%s.%s.config.key-%d", node, mod, k), needJSON(node, mod, "config", fmt.Sprintf("key-%d", k), "met", ""))
			}
			put(spec.NeedsBucket, node+"."+mod+".bound.gitea-read=3Aurl", needJSON(node, mod, "bound", "gitea-read:url", "waiting",
				fmt.Sprintf("gitea's helper has it at %d in its queue", n*modulesN+m)))
			state := "met"
			if m%10 == 0 {
				state = "failed"
			}
			put(spec.NeedsBucket, node+"."+mod+".secret.api-key", needJSON(node, mod, "secret", "api-key", state, "mesh-vault refused own/api-key"))
		}
	}
	select {
	case <-ajs.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("puts not acknowledged")
	}
	return nc, js
}

// BenchmarkMetricsScrapedEverySecond scrapes the server's /metrics once a
// second for 60 s (after a first scrape) over the 100,000-need mesh and
// reports the process's CPU (server and embedded bus: the sweep's reads are
// the bus's work too) as a share of one core. The gauges come from a sweep
// at most 15 s old, or older when a sweep costs more than 4 % of a core
// over that time (metricsShare); the target is ≤ 5 %.
func BenchmarkMetricsScrapedEverySecond(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, js := plant100k(b, ctx)
	reg, _ := newMetrics(newSweepCache(js), zerolog.Nop())
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	scrape := func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(body, []byte("mesh_provisioner_needs{")) {
			b.Fatalf("a scrape without the needs gauge:\n%.500s", body)
		}
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var frac float64
	scrape() // the first sweep: a server's start, not its steady cost
	for b.Loop() {
		c0, t0 := cpu(), time.Now()
		for i := range 60 {
			scrape()
			time.Sleep(time.Until(t0.Add(time.Duration(i+1) * time.Second)))
		}
		frac = float64(cpu()-c0) / float64(time.Since(t0))
	}
	b.ReportMetric(frac*100, "%-of-a-core")
	if frac > 0.05 {
		b.Logf("scraped every second, the server used %.1f %% of a core, over the 5 %% target", frac*100)
	}
}

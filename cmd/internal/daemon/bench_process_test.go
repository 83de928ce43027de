package daemon

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	"github.com/novox/mesh-provisioner/examples/scale"
)

// BenchmarkClientProcess: the real mesh-provisioner-client binary as its
// own process on a node with 10,000 files (as BenchmarkNode's), against
// the same embedded server, mesh-fill and dev vault: time from exec to
// every module applied, the process's peak and settled resident set, its
// CPU per config change, and its CPU over 60 idle seconds. This is the client alone, without the
// nats-server and harness that share the in-process benchmarks' numbers.
func BenchmarkClientProcess(b *testing.B) {
	// BENCH_CLIENT_BIN: a client already built (kept for perf to read its
	// symbols from after the run).
	bin := proctest.Build(b, "github.com/novox/mesh-provisioner/cmd/mesh-provisioner-client", "BENCH_CLIENT_BIN")
	// BENCH_FILL_ROOT=/dev/shm: mesh-fill writes to tmpfs, so the time is
	// the client's own, without this disk's durable writes.
	h := newBenchBusAt(b, os.Getenv("BENCH_FILL_ROOT"))
	m := h.generate(scale.Config{Nodes: 1, Modules: 100, Files: 100, Placeholders: 10, Contributors: 10, Consumers: 100})
	h.load(m)
	files := m.FilesPerNode()

	var logs bytes.Buffer
	start := time.Now()
	cmd := exec.Command(bin, "run", "--node", scale.NodeName(0), "--nats", h.s.ClientURL(), "--fill-socket", h.sock,
		"--state-dir", b.TempDir(), "--control", "", "--refill", "1h", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// BENCH_CLIENT_ENV: extra environment for the client (GOGC=50 …).
	if e := os.Getenv("BENCH_CLIENT_ENV"); e != "" {
		cmd.Env = append(os.Environ(), strings.Fields(e)...)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if b.Failed() {
			b.Logf("the client's log:\n%s", logs.String())
		}
	})
	h.waitReports(3*time.Minute, appliedKeys(m, 0), isApplied)
	cold := time.Since(start)
	h.settle(time.Second)
	pid := cmd.Process.Pid
	b.Run("cold-start", func(b *testing.B) {
		// The bound for a 10,000-file node, with default settings.
		const maxPeak = 200 << 20
		if peak := proctest.Status(b, pid, "VmHWM"); files == 10_000 && peak >= maxPeak {
			b.Errorf("the client peaked at %d MiB resident, over the %d MiB a 10,000-file node may take (all applied after %v)", peak>>20, maxPeak>>20, cold)
		}
		b.ReportMetric(cold.Seconds(), "s-to-all-applied")
		b.ReportMetric(float64(proctest.Status(b, pid, "VmHWM"))/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(proctest.Status(b, pid, "VmRSS"))/(1<<20), "RSS-MiB")
		b.ReportMetric(float64(proctest.Status(b, pid, "VmHWM"))/float64(files), "peak-RSS-B/file")
	})
	// The client's whole CPU per change (receiving it, the graph, the fill
	// request, the report and event), not only the stabilization, against
	// rendering every template of the node again.
	b.Run("one-change", func(b *testing.B) {
		const n = 1000
		c0 := proctest.CPU(b, pid)
		latencies(h, m, rotating(m, n))
		perChange := (proctest.CPU(b, pid) - c0) / n
		full := fullRerender(b, m.Renderer(0))
		b.ReportMetric(float64(perChange.Microseconds()), "client-cpu-us/change")
		b.ReportMetric(ms(full), "full-rerender-ms")
		b.ReportMetric(float64(full)/float64(perChange), "x-cheaper-cpu")
	})
	b.Run("idle", func(b *testing.B) {
		const idleFor = 60 * time.Second
		fills0 := h.fills.count()
		c0 := proctest.CPU(b, pid)
		time.Sleep(idleFor)
		idle := proctest.CPU(b, pid) - c0
		if n := h.fills.count() - fills0; n > 0 {
			b.Fatalf("an idle client sent %d fill requests", n)
		}
		b.ReportMetric(ms(idle)/idleFor.Seconds(), "cpu-ms/s")
		b.ReportMetric(float64(proctest.Status(b, pid, "VmRSS"))/(1<<20), "RSS-MiB-after")
	})
	if strings.Contains(logs.String(), `"level":"error"`) {
		b.Fatalf("the client logged errors:\n%s", logs.String())
	}
}

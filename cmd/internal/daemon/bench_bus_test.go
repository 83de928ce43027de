package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/fill/filltest"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// benchBus is a benchmark's world, like newMesh's but for a *testing.B and
// for big meshes: a real nats-server with JetStream, the provisioner's
// buckets and registry, a real fill server writing into a temp dir whose
// requests are noted (paths and time, not kept whole), the dev vault, and
// the applied events of every client.
type benchBus struct {
	b     *testing.B
	s     *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	dir   string // archives
	root  string
	sock  string
	vault *devvault.Vault
	notes chan fillNote
	fills *fillLog // requests without their content

	keepMu sync.Mutex
	keep   bool           // keep whole requests in kept (for a replay)
	kept   []fill.Request // in the order received

	mu      sync.Mutex
	reports map[string]report.Report // by <node>.<module>, the last applied event
	events  map[string]int           // by <node>.<module>, applied events so far
	evented chan struct{}            // signalled (never blocking) at each applied event
}

// fillNote is one fill request as the fill server received it.
type fillNote struct {
	at  time.Time
	req fill.Request
}

func newBenchBus(b *testing.B) *benchBus { return newBenchBusAt(b, "") }

// newBenchBusAt is newBenchBus with mesh-fill's root under fillRoot
// (os.TempDir() when empty), made by filltest.Dir.
func newBenchBusAt(b *testing.B, fillRoot string) *benchBus {
	b.Helper()
	s := bustest.Start(b)
	h := &benchBus{b: b, s: s, dir: b.TempDir(), notes: make(chan fillNote, 1<<17), fills: &fillLog{},
		reports: map[string]report.Report{}, events: map[string]int{}, evented: make(chan struct{}, 1)}
	h.nc = bustest.Connect(b, s)
	h.js, _ = jetstream.New(h.nc, jetstream.WithPublishAsyncMaxPending(1<<16))
	provisionBus(b, h.js, 1)
	h.root = filltest.Dir(b, fillRoot, "bench-root") // see filltest.Dir for why
	sockDir, err := os.MkdirTemp("", "bench")        // a short path: unix socket names are limited
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(sockDir) })
	h.sock = filepath.Join(sockDir, "fill.sock")
	fs := &fill.Server{Root: h.root, Command: []string{"true"}, OnRequest: func(r fill.Request) {
		select {
		case h.notes <- fillNote{time.Now(), r}:
		default:
		}
		paths := fill.Request{Module: r.Module}
		for _, f := range r.Files {
			paths.Files = append(paths.Files, fill.File{Path: f.Path})
		}
		h.fills.add(paths)
		h.keepMu.Lock()
		if h.keep {
			h.kept = append(h.kept, r)
		}
		h.keepMu.Unlock()
	}}
	fctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go fs.Serve(fctx, h.sock)
	bustest.EventuallyEvery(b, 5*time.Second, time.Millisecond, func() error { _, err := os.Stat(h.sock); return err })
	sub, err := h.nc.Subscribe("prov.applied.>", func(m *nats.Msg) {
		var r report.Report
		if json.Unmarshal(m.Data, &r) == nil {
			h.mu.Lock()
			h.reports[spec.EncodeKey(r.Node, r.Module)] = r
			h.events[spec.EncodeKey(r.Node, r.Module)]++
			h.mu.Unlock()
			select {
			case h.evented <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Unsubscribe() })
	vnc, err := nats.Connect(s.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(vnc.Close)
	h.vault = devvault.New(zerolog.Nop())
	if err := h.vault.Start(vnc, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.vault.Stop)
	return h
}

func (h *benchBus) bucket(name string) jetstream.KeyValue {
	return bustest.Bucket(h.b, h.js, name)
}

// generate makes a synthetic mesh whose archives are files of this bus.
func (h *benchBus) generate(cfg scale.Config) *scale.Mesh {
	h.b.Helper()
	cfg.ArchiveRef = func(name string) string { return "file://" + filepath.Join(h.dir, name+".tar.gz") }
	m, err := scale.Generate(cfg)
	if err != nil {
		h.b.Fatal(err)
	}
	return m
}

// load puts a generated mesh on the bus: archives, assignments, config
// values, bound entries (buckets made) and secrets in the dev vault. Keys
// are published without waiting for each ack (one wait at the end), so a
// big mesh loads in seconds.
func (h *benchBus) load(m *scale.Mesh) {
	h.b.Helper()
	for name, data := range m.Archives {
		if err := os.WriteFile(filepath.Join(h.dir, name+".tar.gz"), data, 0o644); err != nil {
			h.b.Fatal(err)
		}
	}
	for name, v := range m.Secrets {
		h.vault.Set(context.Background(), name, v)
	}
	for bucket := range m.Bound {
		h.bucket(bucket)
	}
	for bucket, kvs := range m.Bound {
		h.putAll(bucket, kvs)
	}
	h.putAll(spec.ConfigBucket, m.ConfigValues)
	asg := map[string][]byte{}
	for _, a := range m.Assignments {
		asg[spec.EncodeKey(a.Node, a.Module)], _ = json.Marshal(a)
	}
	h.putAll(spec.AssignmentsBucket, asg)
}

func (h *benchBus) putAll(bucket string, kvs map[string][]byte) {
	h.b.Helper()
	n := 0
	for k, v := range kvs {
		if _, err := h.js.PublishAsync("$KV."+bucket+"."+k, v); err != nil {
			h.b.Fatal(err)
		}
		if n++; n%4096 == 0 {
			<-h.js.PublishAsyncComplete()
		}
	}
	select {
	case <-h.js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		h.b.Fatalf("%s: %d puts not acknowledged within a minute", bucket, n)
	}
}

// client starts node's daemon with the defaults a real one has (refill
// 1m); stop ends it and waits.
func (h *benchBus) client(node string) (d *Daemon, stop func()) {
	h.b.Helper()
	// The refill tick is left out of the measures (an hour): what one
	// refill costs is what a cold start's fills cost.
	d, err := New(Config{Node: node, Bus: bus.Options{URL: h.s.ClientURL()}, FillSocket: h.sock,
		StateDir: h.b.TempDir(), Refill: time.Hour, Log: benchLog()})
	if err != nil {
		h.b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	h.b.Cleanup(stop)
	return d, stop
}

// waitReports waits until every given <node>.<module> has an applied event
// that ok accepts.
func (h *benchBus) waitReports(timeout time.Duration, keys []string, ok func(report.Report) bool) {
	h.b.Helper()
	bustest.EventuallyEvery(h.b, timeout, time.Millisecond, func() error {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, k := range keys {
			if r, has := h.reports[k]; !has || !ok(r) {
				return fmt.Errorf("no applied report for %s yet", k)
			}
		}
		return nil
	})
}

// appliedEvents is how many applied events <node>.<module> has had.
func (h *benchBus) appliedEvents(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.events[key]
}

// waitEvent waits until <node>.<module> has had more than after applied
// events, woken by each event rather than polling: a harness polling every
// millisecond wakes a thousand times a second beside the client it
// measures (the same client read alike under both, PERFORMANCE.md's tenth
// pass; this one only keeps the harness out of the way).
func (h *benchBus) waitEvent(key string, after int, timeout time.Duration) {
	h.b.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for h.appliedEvents(key) <= after {
		select {
		case <-h.evented:
		case <-t.C:
			h.b.Fatalf("no applied report of %s within %v", key, timeout)
		}
	}
}

// nextFill is the next fill request for module (others are skipped and
// returned), or fails after timeout.
func (h *benchBus) nextFill(module string, timeout time.Duration) (fillNote, []fillNote) {
	h.b.Helper()
	var others []fillNote
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case n := <-h.notes:
			if n.req.Module == module {
				return n, others
			}
			others = append(others, n)
		case <-t.C:
			h.b.Fatalf("no fill request for %s within %v", module, timeout)
		}
	}
}

// drain empties the notes until none came for quiet, and says how many
// there were.
func (h *benchBus) drain(quiet time.Duration) int {
	n, _ := h.settle(quiet)
	return n
}

// settle empties the notes until none came for quiet; it says how many
// there were and when the last was received.
func (h *benchBus) settle(quiet time.Duration) (int, time.Time) {
	n, last := 0, time.Time{}
	for {
		select {
		case note := <-h.notes:
			n++
			last = note.at
		case <-time.After(quiet):
			return n, last
		}
	}
}

// needsWritten waits until no need has been written for quiet and says
// when the last one was (the needs bucket's last message, as the server
// stamped it): a client writes a cold start's needs once its fills are
// answered, so they may still be going out when every module is applied,
// and what is measured next must not count them.
func (h *benchBus) needsWritten(quiet time.Duration) time.Time {
	h.b.Helper()
	for {
		s, err := h.js.Stream(context.Background(), "KV_"+spec.NeedsBucket)
		if err != nil {
			h.b.Fatal(err)
		}
		last := s.CachedInfo().State.LastTime
		if since := time.Since(last); since < quiet {
			time.Sleep(quiet - since) // the earliest it could be quiet
			continue
		}
		return last
	}
}

func appliedKeys(m *scale.Mesh, node int) []string {
	out := make([]string, 0, m.Config.Modules)
	for i := 0; i < m.Config.Modules; i++ {
		out = append(out, spec.EncodeKey(scale.NodeName(node), scale.ModuleName(node, i)))
	}
	return out
}

func isApplied(r report.Report) bool { return r.State == "applied" }

// heapInUse is the heap in use after a full collection.
func heapInUse() uint64 {
	read := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	// What an earlier benchmark of this process let go of as it ended
	// (an embedded server's store, goroutines still stopping) is freed
	// only once they are done: read until the heap stops shrinking, so
	// that a cold start measured next is not credited with it (a 1,000-
	// file node's cold start once read 20 MiB less than nothing).
	heap := read()
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		now := read()
		if now+(1<<20) > heap {
			return min(now, heap)
		}
		heap = now
	}
	return heap
}

// stabilizeSeconds is the time the daemon spent stabilizing so far, and
// how many stabilizations it timed.
func stabilizeSeconds(d *Daemon) (float64, uint64) {
	mfs, err := d.metrics.Registry().Gather()
	if err != nil {
		return 0, 0
	}
	for _, mf := range mfs {
		if mf.GetName() == "provisioner_stabilize_seconds" && len(mf.GetMetric()) == 1 {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleSum(), h.GetSampleCount()
		}
	}
	return 0, 0
}

// graphSize is how many nodes the daemon's graph holds.
func graphSize(b *testing.B, d *Daemon) int {
	n := 0
	if err := d.Do(context.Background(), func(m *nodes.NodeGraph) { n = len(m.Graph().Nodes()) }); err != nil {
		b.Fatal(err)
	}
	return n
}

func hasBytes(r fill.Request, path string, want []byte) bool {
	for _, f := range r.Files {
		if f.Path == path {
			return bytes.Contains(f.Content, want)
		}
	}
	return false
}

// benchLog is the client's log: none, unless BENCH_LOG names a file (to
// see a cold start's timeline).
func benchLog() zerolog.Logger {
	if p := os.Getenv("BENCH_LOG"); p != "" {
		if f, err := os.Create(p); err == nil {
			zerolog.TimeFieldFormat = time.RFC3339Nano
			return zerolog.New(f).With().Timestamp().Logger()
		}
	}
	return zerolog.New(io.Discard)
}

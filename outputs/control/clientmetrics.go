package control

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/novox/mesh-provisioner/nodes"
)

// ClientMetrics are what a client's /metrics serves: its own counters,
// the graph's, the fills', the Go runtime's and the process's. The daemon
// feeds them; Registry is what the control socket serves.
type ClientMetrics struct {
	reg         *prometheus.Registry
	reconnects  prometheus.Counter
	fills       *prometheus.CounterVec
	fillLatency prometheus.Histogram
	stabilize   prometheus.Histogram
	vaultAsks   *prometheus.CounterVec
	modules     *prometheus.GaugeVec
	fillOut     *FillMetrics // refusals by status, no answers, the last that held
}

// NewClientMetrics makes a client's metrics; vaultOutcomes are the
// outcomes a vault ask is counted by (inputs/vault's), each shown at 0.
func NewClientMetrics(vaultOutcomes []string) *ClientMetrics {
	m := &ClientMetrics{
		reg: prometheus.NewRegistry(),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{Name: "provisioner_bus_reconnects_total",
			Help: "Times the bus connection came back."}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provisioner_fills_total",
			Help: "Requests sent to the fill socket (fills, and removals of modules taken off), by outcome."}, []string{"outcome"}),
		fillLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "provisioner_fill_seconds",
			Help: "Latency of requests to the fill socket (fills and removals).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		stabilize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "provisioner_stabilize_seconds",
			Help: "Time of one stabilization.", Buckets: prometheus.ExponentialBuckets(0.00001, 4, 12)}),
		vaultAsks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provisioner_vault_asks_total",
			Help: "Vault asks, by outcome."}, []string{"outcome"}),
		modules: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "provisioner_modules",
			Help: "Modules by state."}, []string{"state"}),
		fillOut: NewFillMetrics(),
	}
	m.reg.MustRegister(m.reconnects, m.fills, m.fillLatency, m.stabilize, m.vaultAsks, m.modules, BuildInfo(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.fillOut.Collectors()...)
	for _, s := range []string{"applied", "waiting", "failed"} {
		m.modules.WithLabelValues(s) // shown at 0 before any module is
	}
	// The outcome counters too: one that first appears at 1 loses that
	// event to increase() and rate(), so an alert on failed fills or
	// refused secrets would miss the first after every restart.
	for _, o := range []string{"ok", "failed"} {
		m.fills.WithLabelValues(o)
	}
	for _, o := range vaultOutcomes {
		m.vaultAsks.WithLabelValues(o)
	}
	return m
}

// Registry is what /metrics gathers.
func (m *ClientMetrics) Registry() *prometheus.Registry { return m.reg }

// Reconnected counts the bus connection come back.
func (m *ClientMetrics) Reconnected() { m.reconnects.Inc() }

// Stabilized records how long one stabilization took.
func (m *ClientMetrics) Stabilized(took time.Duration) { m.stabilize.Observe(took.Seconds()) }

// VaultAsked counts a vault ask by its outcome.
func (m *ClientMetrics) VaultAsked(outcome string) { m.vaultAsks.WithLabelValues(outcome).Inc() }

// Engine registers the graph's own counters.
func (m *ClientMetrics) Engine(read func() (stabs, recomputed, changed, cutoffs uint64)) {
	for _, c := range []struct {
		name, help string
		pick       func() float64
	}{
		{"provisioner_stabilizations_total", "Stabilizations of the graph.", func() float64 { s, _, _, _ := read(); return float64(s) }},
		{"provisioner_nodes_recomputed_total", "Graph nodes recomputed.", func() float64 { _, r, _, _ := read(); return float64(r) }},
		{"provisioner_nodes_changed_total", "Graph nodes whose value changed.", func() float64 { _, _, c, _ := read(); return float64(c) }},
		{"provisioner_cutoffs_total", "Recomputed nodes whose value stayed (cutoff).", func() float64 { _, _, _, c := read(); return float64(c) }},
	} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, c.pick))
	}
}

// ModuleState moves a module from one state's count to another's (the
// stage's OnState): the gauge follows each report as it is written.
func (m *ClientMetrics) ModuleState(was, now string) {
	if was != "" {
		m.modules.WithLabelValues(was).Dec()
	}
	if now != "" {
		m.modules.WithLabelValues(now).Inc()
	}
}

// Filled counts a fill request and its latency (the stage's OnFill).
func (m *ClientMetrics) Filled(took time.Duration, err error) {
	m.fillLatency.Observe(took.Seconds())
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	m.fills.WithLabelValues(outcome).Inc()
	m.fillOut.Count(err)
}

// State registers what is read when scraped: the bus connection, the
// needs by state, counted on the daemon's loop by onLoop, and whether the
// client is healthy.
func (m *ClientMetrics) State(connected func() bool, onLoop func(ctx context.Context, fn func(*nodes.NodeGraph)) error, notReady, unhealthy func() []string) {
	m.reg.MustRegister(
		ConnectedGauge(connected),
		NeedsGauge(func(ctx context.Context) (counts map[string]int, err error) {
			err = onLoop(ctx, func(g *nodes.NodeGraph) { counts = CountNeeds(g) })
			return counts, err
		}),
		HealthyGauge(notReady, unhealthy),
	)
}

// Renders registers how many files and items the graph rendered.
func (m *ClientMetrics) Renders(r *nodes.RenderCounts) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "provisioner_files_rendered_total",
			Help: "File templates rendered."}, func() float64 { return float64(r.Files.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "provisioner_items_rendered_total",
			Help: "Item templates rendered."}, func() float64 { return float64(r.Items.Load()) }),
	)
}

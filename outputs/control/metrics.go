package control

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// What /metrics says beyond the daemon's own counters: what a fleet
// dashboard and its alerts need of a node's client and no other exporter
// gives (docs/DESIGN.md, "What an operator sees of a running client").
// Every label is bounded: states, HTTP statuses, never a path, a module's
// or a secret's name.

// FillStatuses are the statuses provisioner_fill_refusals_total counts by:
// those the fill socket answers (outputs/fill), and "other" for any other
// (a node-engine of another version), so a buggy peer cannot grow the
// series. Each is shown at 0 from the start, so the first refusal after a
// restart is seen by increase().
var FillStatuses = []string{"400", "403", "404", "409", "413", "500", "503", "other"}

// FillOutcome says how a fill request's error is counted: status, the
// answer's status as FillStatuses names it, when the fill socket answered
// no; unanswered when it gave no answer at all (the socket gone, a timeout,
// the connection cut, an answer that does not parse). Neither: it held
// (err nil), or it was not sent (over the request limit).
func FillOutcome(err error) (status string, unanswered bool) {
	if err == nil || errors.Is(err, fill.ErrTooLarge) {
		return "", false
	}
	var se *fill.StatusError
	if !errors.As(err, &se) {
		return "", true
	}
	s := strconv.Itoa(se.Status)
	for _, known := range FillStatuses {
		if s == known {
			return s, false
		}
	}
	return "other", false
}

// NeedStates are the states provisioner_needs counts by (SPEC §5.2).
var NeedStates = []string{"met", "waiting", "failed"}

// CountNeeds counts the needs of every module of g by state, as the needs
// bucket holds them (a secret only declared is no need: SPEC §5.2). Call
// it on the daemon's loop.
func CountNeeds(g *nodes.NodeGraph) map[string]int {
	by := map[graph.State]int{}
	for _, name := range g.Modules() {
		g.CountNeedStates(name, by)
	}
	out := make(map[string]int, len(NeedStates))
	for st, n := range by {
		switch st {
		case graph.Ready:
			out["met"] += n
		case graph.Failed:
			out["failed"] += n
		default:
			out["waiting"] += n
		}
	}
	return out
}

// NeedsGauge is provisioner_needs{state}: counted when scraped, by count
// (which runs CountNeeds on the daemon's loop), not kept up at every
// change, so a change costs nothing more. A loop that does not answer
// within a few seconds (a cold start's batch) leaves the counts of the
// last scrape that got them.
func NeedsGauge(count func(ctx context.Context) (map[string]int, error)) prometheus.Collector {
	return &needsGauge{count: count, last: map[string]int{},
		desc: prometheus.NewDesc("provisioner_needs", "Needs of this node's modules by state (as the needs bucket holds them).", []string{"state"}, nil)}
}

type needsGauge struct {
	count func(ctx context.Context) (map[string]int, error)
	desc  *prometheus.Desc
	mu    sync.Mutex
	last  map[string]int
}

func (n *needsGauge) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

func (n *needsGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := n.count(ctx)
	n.mu.Lock()
	if err == nil {
		n.last = counts
	}
	counts = n.last
	n.mu.Unlock()
	for _, s := range NeedStates {
		ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

// HealthyGauge is provisioner_healthy: 1 when /healthz answers 200, 0
// when it answers 503 (notReady or unhealthy say why), so an alert sees
// what a probe sees: Prometheus reads /metrics, not /healthz.
func HealthyGauge(notReady, unhealthy func() []string) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "provisioner_healthy",
		Help: "1 while /healthz answers 200, else 0 (the bus away, the initial load not done, the assignments unreadable, the fill socket silent)."},
		func() float64 {
			if len(notReady()) > 0 || (unhealthy != nil && len(unhealthy()) > 0) {
				return 0
			}
			return 1
		})
}

// BuildInfo is provisioner_build_info{version,revision,goversion} = 1:
// which build each node runs, for a fleet dashboard to find the nodes a
// rollout has not reached.
func BuildInfo() prometheus.Collector {
	version, revision := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "provisioner_build_info",
		Help:        "The client's build: always 1.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}

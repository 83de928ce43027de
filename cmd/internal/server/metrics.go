package server

import (
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// metricsEvery is how often at most the metrics sweep the mesh: a scrape
// within it is answered from the last sweep (SPEC §6.3).
const metricsEvery = 15 * time.Second

// metricsShare bounds the CPU the metrics' sweeps take, however often they
// are scraped: a sweep that cost C of CPU is made again after C/metricsShare
// at the soonest when that is longer than metricsEvery (a mesh of 100,000
// needs: a sweep costs ~1.9 s of CPU here, so its gauges are up to ~50 s
// old). 4 %, under the 5 % of a core SPEC's targets allow, as the
// process's CPU during a sweep also counts whatever else it did meanwhile.
// mesh_provisioner_sweep_timestamp_seconds says how old the gauges are.
const metricsShare = 0.04

// Stats counts what the server does: registry writes and the verb's
// requests. Its methods do nothing on a nil *Stats.
type Stats struct {
	registryWrites *prometheus.CounterVec
	requests       *prometheus.CounterVec
	requestErrors  *prometheus.CounterVec
}

// knownWhats bounds the what label: anything else counts as "unknown".
var knownWhats = map[string]bool{"registry": true, "needs": true, "applied": true, "collect": true, "sweep": true}

func (s *Stats) request(what string, ok bool) {
	if s == nil {
		return
	}
	if !knownWhats[what] {
		what = "unknown"
	}
	s.requests.WithLabelValues(what).Inc()
	if !ok {
		s.requestErrors.WithLabelValues(what).Inc()
	}
}

func (s *Stats) published(written, deleted int) {
	if s == nil {
		return
	}
	s.registryWrites.WithLabelValues("put").Add(float64(written))
	s.registryWrites.WithLabelValues("delete").Add(float64(deleted))
}

// NewMetrics makes the server's Prometheus registry: its own counters
// (returned as Stats, for the registry writer and the verb) and the
// sweep's gauges, recomputed from a whole-mesh sweep of sweeps at most
// every metricsEvery. A sweep that fails leaves the gauges out of that
// scrape, all but the time of the last sweep made, and is logged.
func newMetrics(sweeps *sweepCache, log zerolog.Logger) (*prometheus.Registry, *Stats) {
	reg := prometheus.NewRegistry()
	st := &Stats{
		registryWrites: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mesh_provisioner_registry_writes_total",
			Help: "Registry keys written (op=put) and deleted (op=delete)."}, []string{"op"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mesh_provisioner_requests_total",
			Help: "Requests of mesh-provisioner.provisioning, by what."}, []string{"what"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mesh_provisioner_request_errors_total",
			Help: "Requests of mesh-provisioner.provisioning answered with an error, by what."}, []string{"what"}),
	}
	for _, op := range []string{"put", "delete"} {
		st.registryWrites.WithLabelValues(op)
	}
	// Shown at 0 from the start: a counter that first appears at 1 loses
	// that request to increase() and rate(), so an alert on the verb's
	// errors would miss the first after every restart.
	for what := range knownWhats {
		st.requests.WithLabelValues(what)
		st.requestErrors.WithLabelValues(what)
	}
	st.requests.WithLabelValues("unknown")
	st.requestErrors.WithLabelValues("unknown")
	reg.MustRegister(st.registryWrites, st.requests, st.requestErrors, &sweepCollector{sweeps: sweeps, log: log})
	return reg, st
}

var (
	modulesDesc = prometheus.NewDesc("mesh_provisioner_modules",
		"Modules by the state of their last report (the applied bucket; no_report: assigned with a plan, and no report of it written; out_of_shape: a report the server cannot read, named by the sweep's out-of-shape finding), from the sweep.", []string{"state"}, nil)
	needsDesc = prometheus.NewDesc("mesh_provisioner_needs",
		"Needs by verdict (met, waiting, stood_asked, failed, out_of_shape), kind and owner, from the sweep; kind=\"module\": a module waiting on its own plan or templates archive with no need waiting; kind=\"unknown\": every kind the registry does not name (and a need key out of shape); out_of_shape needs are owned by their writer, mesh-provisioner-client; owner=\"unknown (no provisions entry)\": every bound need whose provider is not known.",
		[]string{"verdict", "kind", "owner"}, nil)
	orphansDesc = prometheus.NewDesc("mesh_provisioner_orphans",
		"Keys of the needs, applied and collect buckets whose module is assigned nowhere, from the sweep.", nil, nil)
	// outOfShapeDesc counts every key the sweep says out of shape, where
	// mesh_provisioner_needs counts only the needs bucket's: a report or
	// item out of shape (or an assignment carrying a plan) was in
	// summary.out_of_shape and in no series. By bucket, as
	// mesh_provisioner_sweep_unread_buckets labels them: four values at
	// most, each served (0 too) so that an alert sees it rise.
	outOfShapeDesc = prometheus.NewDesc("mesh_provisioner_out_of_shape",
		"Keys out of shape (the key, or its value) by bucket, from the sweep: its out-of-shape findings, summing to its summary.out_of_shape; the needs bucket's are also in mesh_provisioner_needs{verdict=\"out_of_shape\"}, the applied bucket's of modules assigned in mesh_provisioner_modules{state=\"out_of_shape\"}.",
		[]string{"bucket"}, nil)
	unreadDesc = prometheus.NewDesc("mesh_provisioner_sweep_unread_buckets",
		"1 for each bucket the sweep could not read and judged as empty (why: missing, not made yet; not_permitted, the bus refuses the server's user), from the sweep; no series while every bucket is read.",
		[]string{"bucket", "why"}, nil)
	sweepAtDesc = prometheus.NewDesc("mesh_provisioner_sweep_timestamp_seconds",
		"When the sweep these gauges come from was made; while sweeps fail, when the last one made was (and the other gauges are left out).", nil, nil)
)

// sweepCollector serves the sweep's gauges, from a sweep at most
// metricsEvery old.
type sweepCollector struct {
	sweeps *sweepCache
	log    zerolog.Logger

	mu     sync.Mutex
	cost   time.Duration // CPU the last sweep made for the metrics took
	lastAt time.Time     // when that sweep was made
}

// maxAge is how old the gauges' sweep may be: metricsEvery, or longer
// when the last sweep's cost would take more than metricsShare of a core.
func (c *sweepCollector) maxAge() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(metricsEvery, time.Duration(float64(c.cost)/metricsShare))
}

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *sweepCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{modulesDesc, needsDesc, orphansDesc, outOfShapeDesc, unreadDesc, sweepAtDesc} {
		ch <- d
	}
}

func (c *sweepCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout+5*time.Second)
	defer cancel()
	stood, _ := ParseStoodAfter("")
	cpu := processCPU()
	r, err := c.sweeps.get(ctx, SweepParams{StoodAfter: stood}, c.maxAge())
	if err != nil {
		c.log.Warn().Err(err).Msg("metrics: sweep not made")
		// The gauges of an old sweep are not shown as the mesh's now, but
		// when it was made still is: an alert on its age (time() -
		// mesh_provisioner_sweep_timestamp_seconds) then fires as the
		// sweeps fail, where with no sample it would need absent().
		c.mu.Lock()
		last := c.lastAt
		c.mu.Unlock()
		if !last.IsZero() {
			ch <- prometheus.MustNewConstMetric(sweepAtDesc, prometheus.GaugeValue, float64(last.UnixMilli())/1000)
		}
		return
	}
	c.mu.Lock()
	if !r.at.Equal(c.lastAt) { // made now: what it cost (the process's CPU meanwhile, an upper bound)
		c.cost, c.lastAt = processCPU()-cpu, r.at
	}
	c.mu.Unlock()
	for _, state := range []string{"applied", "waiting", "failed", "removed", "no_report", reportStateOutOfShape} {
		ch <- prometheus.MustNewConstMetric(modulesDesc, prometheus.GaugeValue, float64(r.modules[state]), state)
	}
	for l, n := range r.needs {
		ch <- prometheus.MustNewConstMetric(needsDesc, prometheus.GaugeValue, float64(n), l.verdict, l.kind, l.owner)
	}
	ch <- prometheus.MustNewConstMetric(orphansDesc, prometheus.GaugeValue, float64(len(r.reply.Orphans)))
	oos := map[string]int{spec.NeedsBucket: 0, spec.AppliedBucket: 0, spec.CollectBucket: 0, spec.AssignmentsBucket: 0}
	for _, f := range r.reply.Findings {
		if f.Verdict == VerdictOutOfShape {
			oos[f.Bucket]++
		}
	}
	for b, n := range oos {
		ch <- prometheus.MustNewConstMetric(outOfShapeDesc, prometheus.GaugeValue, float64(n), b)
	}
	// The buckets the sweep reads are five, each its own (the labels are
	// bounded): judged as empty, they would read as a mesh without modules.
	for _, b := range r.reply.MissingBuckets {
		ch <- prometheus.MustNewConstMetric(unreadDesc, prometheus.GaugeValue, 1, b, "missing")
	}
	for _, b := range r.reply.UnreadableBuckets {
		ch <- prometheus.MustNewConstMetric(unreadDesc, prometheus.GaugeValue, 1, b, "not_permitted")
	}
	ch <- prometheus.MustNewConstMetric(sweepAtDesc, prometheus.GaugeValue, float64(r.at.UnixMilli())/1000)
}

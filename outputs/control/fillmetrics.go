package control

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FillMetrics are the fill requests' outcomes as /metrics says them:
// provisioner_fill_refusals_total{status} (FillStatuses, each shown at 0
// from the start), provisioner_fill_socket_errors_total (no answer at
// all) and provisioner_last_fill_success_timestamp_seconds. Count takes
// each request's outcome (the stage's OnFill): a counter or a gauge set,
// off the daemon's loop.
type FillMetrics struct {
	refusals   *prometheus.CounterVec
	unanswered prometheus.Counter
	lastOK     prometheus.Gauge
}

// NewFillMetrics makes them, unregistered (Collectors).
func NewFillMetrics() *FillMetrics {
	m := &FillMetrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "provisioner_fill_refusals_total",
			Help: "Fill requests the fill socket answered with an error, by HTTP status."}, []string{"status"}),
		unanswered: prometheus.NewCounter(prometheus.CounterOpts{Name: "provisioner_fill_socket_errors_total",
			Help: "Fill requests the fill socket did not answer (gone, timed out, cut off)."}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "provisioner_last_fill_success_timestamp_seconds",
			Help: "When a fill request last held (Unix time; 0: none since start)."}),
	}
	for _, s := range FillStatuses {
		m.refusals.WithLabelValues(s)
	}
	return m
}

// Collectors are what a registry takes of them.
func (m *FillMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.refusals, m.unanswered, m.lastOK}
}

// Count takes in one fill request's outcome (FillOutcome).
func (m *FillMetrics) Count(err error) {
	switch status, unanswered := FillOutcome(err); {
	case err == nil:
		m.lastOK.Set(float64(time.Now().UnixNano()) / 1e9)
	case status != "":
		m.refusals.WithLabelValues(status).Inc()
	case unanswered:
		m.unanswered.Inc()
	}
}

// ConnectedGauge is provisioner_bus_connected: 1 while connected says the
// bus connection is up, else 0.
func ConnectedGauge(connected func() bool) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "provisioner_bus_connected",
		Help: "1 while the bus connection is up, else 0."}, func() float64 {
		if connected() {
			return 1
		}
		return 0
	})
}

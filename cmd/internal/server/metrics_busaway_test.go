package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// promScrapeTimeout is Prometheus's default scrape_timeout: a scrape not
// answered within it is a target down, its samples lost (the counters and
// the sweep's time with them).
const promScrapeTimeout = 10 * time.Second

// TestMetricsWhileTheBusIsAwayAnswerAtOnceWithTheLastSweepsTime: with the
// bus away, a scrape that needs a new sweep waited for the sweep's reads
// to time out (30 s and 5 more), longer than Prometheus waits for a
// scrape, so the target read as down and the sweep's time, which an alert
// on the gauges' age reads, was never seen. It is answered at once: the
// counters and the last sweep's time, no gauge of the mesh.
func TestMetricsWhileTheBusIsAwayAnswerAtOnceWithTheLastSweepsTime(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s, nats.MaxReconnects(-1))
	ensure(t, js)
	cache := newSweepCache(js)
	reg, _ := newMetrics(cache, quietLog())
	srv := httptest.NewServer(metricsMux(reg))
	t.Cleanup(srv.Close)
	hc := &http.Client{Timeout: promScrapeTimeout}
	scrapeOnce := func() (map[string]float64, error) {
		resp, err := hc.Get(srv.URL + "/metrics")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, errors.New(resp.Status + ": " + string(body))
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for name, f := range fams {
			for _, m := range f.Metric {
				out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		return out, nil
	}
	before, err := scrapeOnce()
	if err != nil {
		t.Fatal(err)
	}
	at := before["mesh_provisioner_sweep_timestamp_seconds"]
	if at == 0 {
		t.Fatalf("no sweep time after a sweep: %v", before)
	}

	bustest.Stop(s)
	bustest.Eventually(t, 10*time.Second, func() error {
		if nc.IsConnected() {
			return errors.New("the connection has not seen the bus go yet")
		}
		return nil
	})
	cache.mu.Lock()
	cache.now = func() time.Time { return time.Now().Add(time.Hour) } // the last sweep too old to serve
	cache.mu.Unlock()
	after, err := scrapeOnce()
	if err != nil {
		t.Fatalf("a scrape with the bus away is not answered within Prometheus's scrape timeout (%v): %v", promScrapeTimeout, err)
	}
	if got := after["mesh_provisioner_sweep_timestamp_seconds"]; got != at {
		t.Errorf("with the bus away, the sweep time reads %v, want the last sweep's %v", got, at)
	}
	if _, ok := after["mesh_provisioner_orphans"]; ok {
		t.Errorf("with the bus away, the last sweep's gauges are shown as now: %v", after)
	}
	if _, ok := after["mesh_provisioner_requests_total"]; !ok {
		t.Errorf("with the bus away, the verb's counters are not shown: %v", after)
	}
}

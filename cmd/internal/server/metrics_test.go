package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/novox/mesh-provisioner/cmd/internal/rulecheck"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// scrape reads addr's /metrics.
func scrape(t *testing.T, addr string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams, string(body)
}

// value is the value of the sample of family name with exactly labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		if len(m.Label)*2 != len(labels) {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return 0
}

func TestServeMetricsFromTheSweep(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	plantFleet(t, js, 0)
	reg := bucket(t, js, spec.RegistryBucket)
	put(t, reg, "retired", `{"kind":"retired"}`)                      // Run deletes it
	put(t, reg, "config", `{"kind":"config","owner":"someone-else"}`) // and puts it back

	addr := fmt.Sprintf("127.0.0.1:%d", bustest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: s.ClientURL(), RegistryEvery: time.Hour, Metrics: addr, Log: quietLog()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	bustest.Eventually(t, 10*time.Second, func() error {
		// The registry first: a scrape before Run put it back would keep
		// a sweep of the old one for 15 s.
		if _, err := reg.Get(context.Background(), "retired"); err == nil {
			return fmt.Errorf("registry not published yet")
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/metrics: %s", resp.Status)
		}
		_, err = nc.Request(spec.QuerySubject, []byte(`{"what":"sweep"}`), 5*time.Second)
		return err
	})
	// The pass counts its writes once it is over, after the delete the
	// wait above saw.
	bustest.Eventually(t, 10*time.Second, func() error {
		fams, _ := scrape(t, addr)
		if value(t, fams, "mesh_provisioner_registry_writes_total", "op", "delete") == 0 {
			return fmt.Errorf("the registry pass is not counted yet")
		}
		return nil
	})
	if _, err := nc.Request(spec.QuerySubject, []byte(`{"what":"nope"}`), 5*time.Second); err != nil {
		t.Fatal(err)
	}

	fams, _ := scrape(t, addr)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mesh_provisioner_modules", []string{"state", "failed"}, 2},
		{"mesh_provisioner_modules", []string{"state", "applied"}, 1},
		{"mesh_provisioner_modules", []string{"state", "waiting"}, 1},
		{"mesh_provisioner_needs", []string{"verdict", "failed", "kind", "bound", "owner", "gitea"}, 2},
		{"mesh_provisioner_needs", []string{"verdict", "met", "kind", "config", "owner", "mesh-config"}, 2},
		{"mesh_provisioner_needs", []string{"verdict", "waiting", "kind", "bound", "owner", "route-proxy"}, 1},
		{"mesh_provisioner_needs", []string{"verdict", "waiting", "kind", kindUnknown, "owner", ownerNoRegistry}, 1},
		{"mesh_provisioner_needs", []string{"verdict", "out_of_shape", "kind", "config", "owner", ownerClient}, 2},
		{"mesh_provisioner_orphans", nil, 4},
		{"mesh_provisioner_registry_writes_total", []string{"op", "put"}, 1},
		{"mesh_provisioner_registry_writes_total", []string{"op", "delete"}, 1},
		{"mesh_provisioner_requests_total", []string{"what", "unknown"}, 1},
		{"mesh_provisioner_request_errors_total", []string{"what", "unknown"}, 1},
	} {
		if got := value(t, fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(t, fams, "mesh_provisioner_requests_total", "what", "sweep"); got < 1 {
		t.Errorf("sweep requests %v, want at least 1", got)
	}

	// Within 15 s a scrape is answered from the same sweep.
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "zsh", "config", "new", "failed", "refused")
	again, _ := scrape(t, addr)
	if got := value(t, again, "mesh_provisioner_needs", "verdict", "failed", "kind", "bound", "owner", "gitea"); got != 2 {
		t.Errorf("second scrape: %v", got)
	}
	if fams["mesh_provisioner_sweep_timestamp_seconds"].Metric[0].Gauge.GetValue() !=
		again["mesh_provisioner_sweep_timestamp_seconds"].Metric[0].Gauge.GetValue() {
		t.Errorf("a scrape within 15 s swept again")
	}
}

func TestSweepCacheSweepsAgainAfterItsAge(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	c := newSweepCache(js)
	now := time.Now()
	c.now = func() time.Time { return now }
	p := SweepParams{StoodAfter: time.Minute}
	first, err := c.get(testCtx(t), p, metricsEvery)
	if err != nil {
		t.Fatal(err)
	}
	putNeed(t, bucket(t, js, spec.NeedsBucket), "ace", "m", "config", "k", "failed", "x")
	now = now.Add(metricsEvery - time.Second)
	if r, _ := c.get(testCtx(t), p, metricsEvery); r != first {
		t.Errorf("swept again within %s", metricsEvery)
	}
	if r, _ := c.get(testCtx(t), p, 0); r == first || r.reply.Summary.Needs.Failed != 1 {
		t.Errorf("maxAge 0 did not sweep again")
	}
	now = now.Add(metricsEvery + time.Second)
	if r, _ := c.get(testCtx(t), p, metricsEvery); r.at != now {
		t.Errorf("a sweep older than %s was served", metricsEvery)
	}
}

// checkRules checks the example alerting rules against what the server
// serves (rulecheck), and that the alerts an operator needs are there.
// served must hold every family the rules name:
// mesh_provisioner_sweep_unread_buckets is served only while a bucket is
// not read (TestMetricsSayWhichBucketsTheSweepCouldNotRead).
func checkRules(t *testing.T, served string) {
	t.Helper()
	alerts := rulecheck.Check(t, "../../../examples/prometheus/mesh-provisioner.rules.yml", "mesh_provisioner_", served)
	// MeshModulesWithoutReport: a node whose client went quiet has no need
	// to judge, so neither of the others fires for it. The last three: a
	// sweep that fails leaves every gauge but its time out, and one that
	// cannot read a bucket judges it empty, so without them a server gone
	// blind (or not scraped at all) reads as a healthy mesh and nothing
	// fires.
	for _, a := range []string{"MeshNeedStoodAsked", "MeshModuleFailed", "MeshModulesWithoutReport",
		"MeshSweepStale", "MeshSweepBucketUnread", "MeshProvisionerMetricsAbsent"} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

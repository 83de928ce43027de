package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// What a fleet dashboard and its alerts read of a client's /metrics, each
// moved by the thing it counts on the real client: needs by state, the
// fill socket's refusals by status and its silence, the time of the last
// fill that held, the bus connection, and the build.
func TestMetricsMoveWithWhatAnAlertWatches(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill("/etc/web/**")
	m.webModule()
	p, tm := oneFile("cfg", "flavour = ${config:flavour}\n")
	m.assign("ace", "cfg", p, tm) // waits for ace.cfg.flavour
	sock := ctlSock(t)
	m.client("ace", withControl(sock), f.socket)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "cfg", "waiting")

	var fams map[string]*dto.MetricFamily
	wait := func(what string, ok func() bool) {
		t.Helper()
		bustest.Eventually(t, 10*time.Second, func() error {
			fams = scrape(t, sock)
			if !ok() {
				return fmt.Errorf("%s: needs %v/%v/%v, refusals 403 %v, socket errors %v, last fill %v, bus %v",
					what, metric(fams, "provisioner_needs", "state", "met"), metric(fams, "provisioner_needs", "state", "waiting"),
					metric(fams, "provisioner_needs", "state", "failed"), metric(fams, "provisioner_fill_refusals_total", "status", "403"),
					metric(fams, "provisioner_fill_socket_errors_total"), metric(fams, "provisioner_last_fill_success_timestamp_seconds"),
					metric(fams, "provisioner_bus_connected"))
			}
			return nil
		})
	}
	start := float64(time.Now().Add(-time.Minute).Unix())
	wait("at rest", func() bool {
		return metric(fams, "provisioner_needs", "state", "waiting") == 1 && metric(fams, "provisioner_needs", "state", "met") >= 4 &&
			metric(fams, "provisioner_needs", "state", "failed") == 0 && metric(fams, "provisioner_bus_connected") == 1 &&
			metric(fams, "provisioner_fill_refusals_total", "status", "403") == 0 && metric(fams, "provisioner_fill_socket_errors_total") == 0 &&
			metric(fams, "provisioner_last_fill_success_timestamp_seconds") > start
	})
	if metric(fams, "provisioner_build_info") != 1 || metric(fams, "process_resident_memory_bytes") <= 0 || metric(fams, "go_goroutines") <= 0 {
		t.Fatalf("build info %v, rss %v, goroutines %v", metric(fams, "provisioner_build_info"),
			metric(fams, "process_resident_memory_bytes"), metric(fams, "go_goroutines"))
	}
	lastOK := metric(fams, "provisioner_last_fill_success_timestamp_seconds")
	// The counts are those of the needs bucket (written a moment after).
	bustest.Eventually(t, 5*time.Second, func() error {
		bucket := map[string]float64{}
		keys, err := m.kv(spec.NeedsBucket).ListKeys(t.Context())
		if err != nil {
			return err
		}
		for k := range keys.Keys() {
			v, _ := m.get(spec.NeedsBucket, k)
			var n struct{ State string }
			json.Unmarshal([]byte(v), &n)
			bucket[n.State]++
		}
		fams := scrape(t, sock)
		for _, st := range []string{"met", "waiting", "failed"} {
			if got := metric(fams, "provisioner_needs", "state", st); got != bucket[st] {
				return fmt.Errorf("provisioner_needs{state=%q} %v, the needs bucket holds %v", st, got, bucket[st])
			}
		}
		return nil
	})

	// cfg's value comes: its need is met, and its file is outside what the
	// fill socket allows: a 403.
	m.put(spec.ConfigBucket, "ace.cfg.flavour", "mint")
	m.waitState("ace", "cfg", "failed")
	wait("refused", func() bool {
		return metric(fams, "provisioner_needs", "state", "waiting") == 0 &&
			metric(fams, "provisioner_fill_refusals_total", "status", "403") >= 1 &&
			metric(fams, "provisioner_fills_total", "outcome", "failed") >= 1 &&
			metric(fams, "provisioner_last_fill_success_timestamp_seconds") == lastOK
	})

	// The fill socket goes: a change's fill gets no answer.
	f.stop()
	m.put(spec.ConfigBucket, "ace.web.flavour", "lime")
	wait("fill socket gone", func() bool { return metric(fams, "provisioner_fill_socket_errors_total") >= 1 })

	// The bus goes.
	bustest.Stop(m.s)
	wait("bus gone", func() bool { return metric(fams, "provisioner_bus_connected") == 0 })
	m.s = bustest.Start(t, m.again)
	wait("bus back", func() bool { return metric(fams, "provisioner_bus_connected") == 1 })
}

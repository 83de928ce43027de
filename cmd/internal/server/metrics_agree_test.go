package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestMetricsAgreeWithTheSweepOnTheSameBus: what `serve --metrics` says of
// the mesh is what `mesh-provisioner sweep --json` says of it (SPEC §6.3
// "recomputed from the sweep"): the modules by state, the needs by verdict
// (summed over kind and owner; kind "module", a module waiting on its own
// plan or archive, is a finding and no need of the summary), the orphans;
// a module whose report is out of shape under state out_of_shape; the
// keys out of shape, by bucket.
func TestMetricsAgreeWithTheSweepOnTheSameBus(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	plantFleet(t, js, 0)
	as := assignmentsKV(t, js)
	put(t, as, "h1.lost", `{"provisioning":{"files":[{"path":"/etc/lost","template":"t"}]}}`) // no report: no client on h1
	put(t, as, "h2.odd", `{"provisioning":{}}`)
	put(t, bucket(t, js, spec.AppliedBucket), "h2.odd", `garbage`) // a report out of shape: a module all the same

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
	var reply SweepReply
	bustest.Eventually(t, 10*time.Second, func() error {
		msg, err := nc.Request(spec.QuerySubject, []byte(`{"what":"sweep"}`), 5*time.Second)
		if err != nil {
			return err
		}
		return json.Unmarshal(msg.Data, &reply)
	})
	fams, _ := scrape(t, addr)

	sum := reply.Summary
	for state, want := range map[string]int{"applied": sum.Applied, "waiting": sum.Waiting, "failed": sum.Failed,
		"removed": sum.Removed, "no_report": sum.NoReport, "out_of_shape": sum.ReportOutOfShape} {
		if got := value(t, fams, "mesh_provisioner_modules", "state", state); got != float64(want) {
			t.Errorf("mesh_provisioner_modules{state=%q} = %v, the sweep's summary says %d", state, got, want)
		}
	}
	if sum.NoReport != 1 {
		t.Errorf("the sweep counts %d modules without a report, want 1 (h1/lost)", sum.NoReport)
	}
	if sum.ReportOutOfShape != 1 || sum.Applied+sum.Waiting+sum.Failed+sum.Removed+sum.ReportOutOfShape != sum.Modules {
		t.Errorf("summary %+v: want h2/odd's report out of shape, and the modules' states summing to modules", sum)
	}
	byVerdict := map[string]float64{}
	for _, m := range fams["mesh_provisioner_needs"].Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["kind"] != "module" {
			byVerdict[l["verdict"]] += m.Gauge.GetValue()
		}
	}
	for verdict, want := range map[string]int{"met": sum.Needs.Met, "waiting": sum.Needs.Waiting,
		"stood_asked": sum.Needs.StoodAsked, "failed": sum.Needs.Failed} {
		if byVerdict[verdict] != float64(want) {
			t.Errorf("mesh_provisioner_needs{verdict=%q} sums to %v, the sweep's summary says %d", verdict, byVerdict[verdict], want)
		}
	}
	oos := 0.0
	for _, m := range fams["mesh_provisioner_out_of_shape"].GetMetric() {
		oos += m.Gauge.GetValue()
	}
	if oos != float64(sum.OutOfShape) {
		t.Errorf("mesh_provisioner_out_of_shape sums to %v, the sweep's summary says %d", oos, sum.OutOfShape)
	}
	if got := value(t, fams, "mesh_provisioner_orphans"); got != float64(len(reply.Orphans)) || got != float64(sum.Orphans) {
		t.Errorf("mesh_provisioner_orphans = %v, the sweep names %d (summary %d)", got, len(reply.Orphans), sum.Orphans)
	}
}

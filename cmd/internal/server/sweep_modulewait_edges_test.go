package server

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module's own wait as the rest of the sweep treats keys: narrowed by
// node and module, an orphan when its assignment is gone (neither judged
// nor counted), and never among the needs' counts.
func TestAModuleWaitIsNarrowedAndOrphanedAsAReportIs(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	if _, _, err := PublishRegistry(testCtx(t), bucket(t, js, spec.RegistryBucket), Registry()); err != nil {
		t.Fatal(err)
	}
	as := assignmentsKV(t, js)
	put(t, as, "ace.web", `{"provisioning":{}}`)
	put(t, as, "g14.web", `{"provisioning":{}}`)
	applied := bucket(t, js, spec.AppliedBucket)
	const w = `"waiting":[{"kind":"module","name":"web","why":"templates archive x: not there yet"}]`
	for _, node := range []string{"ace", "g14", "old"} {
		put(t, applied, node+".web", `{"node":"`+node+`","module":"web","state":"waiting","files":[],`+w+`}`)
	}
	later := time.Now().Add(time.Hour)
	judge := func(p SweepParams) *sweepResult {
		t.Helper()
		p.StoodAfter = 10 * time.Minute
		res, err := sweep(testCtx(t), js, p, later)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r := judge(SweepParams{}).reply
	if r.Summary.StoodModules != 2 || len(r.Findings) != 1 || r.Findings[0].Count != 2 || len(r.Orphans) != 1 {
		t.Fatalf("whole mesh: summary %+v findings %+v orphans %+v", r.Summary, r.Findings, r.Orphans)
	}
	if n := r.Summary.Needs; n.Met+n.Waiting+n.StoodAsked+n.Failed != 0 {
		t.Fatalf("a module wait counted among the needs: %+v", n)
	}
	r = judge(SweepParams{Node: "ace"}).reply
	if r.Summary.StoodModules != 1 || len(r.Findings) != 1 || r.Findings[0].Count != 1 || r.Findings[0].Needs[0].Node != "ace" {
		t.Fatalf("narrowed to ace: summary %+v findings %+v", r.Summary, r.Findings)
	}
	r = judge(SweepParams{Module: "api"}).reply
	if r.Summary.StoodModules != 0 || len(r.Findings) != 0 || r.Held() {
		t.Fatalf("narrowed to api: summary %+v findings %+v", r.Summary, r.Findings)
	}
	res := judge(SweepParams{Node: "old"})
	if res.reply.Summary.StoodModules != 0 || len(res.reply.Findings) != 0 || res.reply.Held() || len(res.reply.Orphans) != 1 {
		t.Fatalf("orphan: %+v", res.reply)
	}
	if n := judge(SweepParams{}).needs[needLabels{"stood_asked", "module", "mesh-controller"}]; n != 2 {
		t.Fatalf("gauge %d, want 2", n)
	}
}

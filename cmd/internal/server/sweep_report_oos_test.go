package server

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module assigned with a plan whose report is out of shape (not JSON, a
// state SPEC §5.3 does not name) is a module all the same: counted in
// summary.modules and report_out_of_shape, in mesh_provisioner_modules
// under state out_of_shape, and held back (exit 1) once its report has
// stood longer than stood_after, as a module without a report is. Before,
// it counted nowhere: "modules 0", exit 0, and the command said that no
// module was assigned to its node.
func TestAModuleWhoseReportIsOutOfShapeIsCountedAndHeld(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensureRegistered(t, js)
	as := assignmentsKV(t, js)
	put(t, as, "z.solo", `{"provisioning":{}}`)
	put(t, as, "z.odd", `{"provisioning":{}}`)
	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "z.solo", `garbage`)
	put(t, applied, "z.odd", `{"node":"z","module":"odd","state":"sleeping"}`)
	now := time.Now()

	r, err := sweep(testCtx(t), js, SweepParams{Node: "z", StoodAfter: time.Minute}, now)
	if err != nil {
		t.Fatal(err)
	}
	sum := r.reply.Summary
	if sum.Modules != 2 || sum.ReportOutOfShape != 2 || sum.ReportOutOfShapeStood != 0 || sum.NoReport != 0 || sum.OutOfShape != 2 {
		t.Errorf("summary %+v: want 2 modules, both with their report out of shape (not stood), 2 keys out of shape", sum)
	}
	if r.reply.Held() {
		t.Errorf("reports out of shape for less than stood_after hold the mesh back")
	}
	if r.reply.NoPlan != "" || r.reply.NothingNamed != "" {
		t.Errorf("the sweep says %q %q of node z, which has two modules assigned with a plan", r.reply.NoPlan, r.reply.NothingNamed)
	}
	if r.modules[reportStateOutOfShape] != 2 {
		t.Errorf("the metrics count %v, want 2 modules out_of_shape", r.modules)
	}

	r, err = sweep(testCtx(t), js, SweepParams{Node: "z", StoodAfter: time.Second}, now.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if sum := r.reply.Summary; sum.ReportOutOfShapeStood != 2 || !r.reply.Held() {
		t.Errorf("reports out of shape for over stood_after: summary %+v, held %v; want 2 stood, held", sum, r.reply.Held())
	}
}

// The stderr line "no module with a provisioning plan is assigned" is the
// server's (no_plan), read off the assignments: said of a narrowing whose
// modules are assigned without a plan, not of one whose modules count
// nowhere else.
func TestTheSweepSaysNoPlanFromTheAssignments(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensureRegistered(t, js)
	as := assignmentsKV(t, js)
	put(t, as, "bare.web", `{"node":"bare","module":"web"}`)
	put(t, as, "z.solo", `{"provisioning":{}}`)
	put(t, bucket(t, js, spec.AppliedBucket), "z.solo", `garbage`)
	for node, want := range map[string]string{"bare": "no module with a provisioning plan is assigned to node bare", "z": ""} {
		r, err := sweep(testCtx(t), js, SweepParams{Node: node}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if r.reply.NoPlan != want {
			t.Errorf("node %s: no_plan %q, want %q", node, r.reply.NoPlan, want)
		}
	}
}

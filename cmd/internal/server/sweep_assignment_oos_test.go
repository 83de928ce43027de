package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An assignment key out of shape (SPEC §2.1) whose value carries a plan is
// a module the controller meant for a node that no client will ever
// provision: a controller encoding '-' (ace.claude=2Dcode) or writing
// lower-case hex (=3a). Its client warns of it in its own log alone; the
// sweep read the key and dropped it unsaid. It is a finding "out of
// shape" owned by mesh-controller, narrowed as the module's keys are; a key
// out of shape whose value carries no plan is another domain's, and is
// left out.
func TestTheSweepSaysAnAssignmentKeyOutOfShapeThatCarriesAPlan(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	asg := assignmentsKV(t, js)
	plan := `{"provisioning":{"files":[]}}`
	put(t, asg, "ace.web", plan)
	put(t, asg, "ace.claude=2Dcode", plan)              // '-' escaped
	put(t, asg, "ace.shell=3azsh", plan)                // lower-case hex
	put(t, asg, "ace.web.extra", plan)                  // 3 tokens
	put(t, asg, "=61ce.web", plan)                      // the node's 'a' escaped
	put(t, asg, "ace.other=2D", `{"x": 1}`)             // no plan: another domain's
	put(t, asg, "g14.web=ZZ", `{"provisioning": null}`) // no plan either
	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "ace.web", `{"node":"ace","module":"web","state":"applied","at":"2026-01-01T00:00:00Z","files":[],"waiting":[],"reason":""}`)
	serveQuery(t, nc, js)

	oos := func(node, module string) map[string]Finding {
		t.Helper()
		r, err := AskSweep(testCtx(t), nc, node, module, "")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Finding{}
		for _, f := range r.Findings {
			if f.Verdict == VerdictOutOfShape && f.Bucket == spec.AssignmentsBucket {
				out[f.Key] = f
			}
		}
		if r.Summary.OutOfShape != len(out) {
			t.Errorf("summary.out_of_shape %d, findings %d", r.Summary.OutOfShape, len(out))
		}
		return out
	}
	all := oos("", "")
	for _, k := range []string{"ace.claude=2Dcode", "ace.shell=3azsh", "ace.web.extra", "=61ce.web"} {
		f, ok := all[k]
		if !ok {
			t.Errorf("%s not said out of shape: %v", k, all)
			continue
		}
		if f.Owner != "mesh-controller" || f.Why == "" || f.Since == "" {
			t.Errorf("%s: %+v", k, f)
		}
	}
	if !strings.Contains(all["ace.claude=2Dcode"].Why, "stands as itself") {
		t.Errorf("why %q", all["ace.claude=2Dcode"].Why)
	}
	for _, k := range []string{"ace.other=2D", "g14.web=ZZ", "ace.web"} {
		if _, ok := all[k]; ok {
			t.Errorf("%s said out of shape", k)
		}
	}
	if got := oos("ace", ""); len(got) != 3 || got["=61ce.web"].Key != "" {
		t.Errorf("narrowed to node ace: %v", got)
	}
	if got := oos("g14", ""); len(got) != 0 {
		t.Errorf("narrowed to node g14: %v", got)
	}
	if got := oos("", "web"); len(got) != 2 {
		t.Errorf("narrowed to module web: %v", got) // ace.web.extra and =61ce.web
	}
}

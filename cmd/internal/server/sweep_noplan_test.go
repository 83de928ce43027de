package server

import (
	"fmt"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An assignment whose value is JSON but not an object (a list, a string,
// a number) carries no plan: the client ignores it (nodes.ParseAssignment:
// ErrNoPlan, SPEC §3 r2) and writes no report, so the sweep must not count
// it among the modules assigned without a report (a node gone quiet, for
// ever), and the keys left of it are orphans. A value that is not JSON, or
// whose plan does not parse, is the client's to fail: assigned with a plan.
func TestSweepTakesAnAssignmentThatIsNoJSONObjectAsCarryingNoPlan(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	as := assignmentsKV(t, js)
	for key, v := range map[string]string{
		"ace.web": `{"provisioning":{}}`, "ace.broken": `{"provisioning":7}`, "ace.garbled": `{"provisioning":`,
		"ace.list": `["provisioning"]`, "ace.text": `"provisioning"`, "ace.number": ` 7`, "ace.yes": `true`,
	} {
		put(t, as, key, v)
	}
	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "ace.list", `{"node":"ace","module":"list","state":"applied"}`)
	serveQuery(t, nc, js)
	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.NoReport); got != "[{ace broken} {ace garbled} {ace web}]" || r.Summary.NoReport != 3 {
		t.Errorf("no_report %s (summary %d), want ace/broken, ace/garbled and ace/web", got, r.Summary.NoReport)
	}
	if len(r.Orphans) != 1 || r.Orphans[0].Key != "ace.list" || r.Orphans[0].Why != "assignment carries no provisioning plan" {
		t.Errorf("orphans %+v, want ace.list's report (its assignment carries no plan)", r.Orphans)
	}
}

// A plan followed by a null under its name is the client's to fail (it
// refuses it as given twice, nodes.ParseAssignment), not a value without a
// plan: assigned with a plan, and its report no orphan.
func TestSweepTakesAPlanFollowedByANullAsAPlan(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	as := assignmentsKV(t, js)
	put(t, as, "ace.twice", `{"provisioning":{},"provisioning":null}`)
	put(t, as, "ace.cased", `{"provisioning":{"files":[]}, "Provisioning" : null}`)
	put(t, as, "ace.none", `{"provisioning":null,"runs":{"provisioning":{}}}`)
	applied := bucket(t, js, spec.AppliedBucket)
	put(t, applied, "ace.cased", `{"node":"ace","module":"cased","state":"failed"}`)
	put(t, applied, "ace.none", `{"node":"ace","module":"none","state":"applied"}`)
	serveQuery(t, nc, js)
	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.NoReport); got != "[{ace twice}]" {
		t.Errorf("no_report %s, want ace/twice", got)
	}
	if len(r.Orphans) != 1 || r.Orphans[0].Key != "ace.none" {
		t.Errorf("orphans %+v, want ace.none's report alone", r.Orphans)
	}
}

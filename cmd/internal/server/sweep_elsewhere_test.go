package server

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module that left node ace but stays assigned on other nodes leaves
// ace's keys orphaned: the orphan's why says where the module is, not
// that it is assigned nowhere (which would send an operator looking for
// a module the controller removed). A module assigned elsewhere only
// without a plan (not the provisioner's) is assigned nowhere for it.
func TestAnOrphanOfAModuleAssignedOnOtherNodesSaysWhere(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	as := assignmentsKV(t, js)
	for _, n := range []string{"h1", "g14", "k2", "m3"} {
		put(t, as, n+".web", `{"provisioning":{}}`)
	}
	put(t, as, "g14.db", `{"node":"g14","module":"db"}`) // not the provisioner's
	needs := bucket(t, js, spec.NeedsBucket)
	putNeed(t, needs, "ace", "web", "config", "x", "waiting", "w")
	putNeed(t, needs, "ace", "db", "config", "x", "waiting", "w")
	put(t, bucket(t, js, spec.AppliedBucket), "ace.web", `{"node":"ace","module":"web","state":"applied"}`)
	put(t, bucket(t, js, spec.CollectBucket), "ace.c.web", `{"collection":"c","contributor":"web","item":"x"}`)
	serveQuery(t, nc, js)

	r, err := AskSweep(testCtx(t), nc, "", "", time.Hour.String())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range r.Orphans {
		got = append(got, o.Bucket+" "+o.Key+": "+o.Why)
	}
	const web = "module assigned on other nodes only (g14, h1, k2 and 1 more)"
	want := []string{
		"mesh-provisioner_needs ace.db.config.x: module assigned nowhere",
		"mesh-provisioner_needs ace.web.config.x: " + web,
		"mesh-provisioner_applied ace.web: " + web,
		"mesh-provisioner_collect ace.c.web: " + web,
	}
	if fmtKeys(got) != fmtKeys(want) {
		t.Errorf("orphans %s\n   want %s", fmtKeys(got), fmtKeys(want))
	}
	if r.Summary.Orphans != 4 || r.Summary.Modules != 0 || r.Summary.Needs.Waiting != 0 {
		t.Errorf("summary %+v: the orphans are neither judged nor counted", r.Summary)
	}
}

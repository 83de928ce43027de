package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module whose every need is met, or that has none yet, may still wait:
// for its templates archive (a plan naming an object never uploaded). Its
// report says so (waiting, kind "module"), but no need does, so the sweep
// named it nowhere, never judged it stood asked, and exited 0 however long
// it waited. It is a finding of kind "module", judged by its report's last
// change, owned by the plan's publisher; grouped across nodes by its why.
func TestASweepJudgesAModuleWaitingForItsArchive(t *testing.T) {
	js := webOnAceAndG14(t)
	const why = `templates archive obj://mesh-artifacts/web.tar.gz: not there yet: object \"web.tar.gz\" in bucket \"mesh-artifacts\": nats: object not found`
	applied := bucket(t, js, spec.AppliedBucket)
	for _, node := range []string{"ace", "g14"} {
		put(t, applied, node+".web", `{"node":"`+node+`","module":"web","state":"waiting","files":[],"waiting":[{"kind":"module","name":"web","why":"`+why+`"}]}`)
	}

	judge := func(now time.Time) SweepReply {
		t.Helper()
		res, err := sweep(testCtx(t), js, SweepParams{StoodAfter: 10 * time.Minute}, now)
		if err != nil {
			t.Fatal(err)
		}
		return res.reply
	}
	r := judge(time.Now())
	if len(r.Findings) != 1 || r.Held() {
		t.Fatalf("a fresh wait: held %v, findings %+v; want one waiting finding, not held", r.Held(), r.Findings)
	}
	if f := r.Findings[0]; f.Verdict != VerdictWaiting || f.Kind != "module" || f.Name != "web" || f.Owner != "mesh-controller" ||
		f.Count != 2 || !strings.HasPrefix(f.Why, "templates archive obj://mesh-artifacts/web.tar.gz") || f.Since == "" {
		t.Fatalf("finding %+v", f)
	}
	r = judge(time.Now().Add(time.Hour))
	if len(r.Findings) != 1 || r.Findings[0].Verdict != VerdictStoodAsked || !r.Held() || r.Summary.StoodModules != 2 {
		t.Fatalf("an hour on: held %v, summary %+v, findings %+v; want it stood asked and held", r.Held(), r.Summary, r.Findings)
	}
	var text bytes.Buffer
	WriteSweep(&text, r)
	for _, want := range []string{"stood asked   mesh-controller  module web  \"templates archive", "ace/web", "g14/web",
		"2 modules stood asked on their own plan or templates archive"} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("the sweep for people lacks %q:\n%s", want, text.String())
		}
	}
}

// A module's own wait as the rest of the sweep treats keys: narrowed by
// node and module, an orphan when its assignment is gone (neither judged
// nor counted), and never among the needs' counts.
func TestAModuleWaitIsNarrowedAndOrphanedAsAReportIs(t *testing.T) {
	js := webOnAceAndG14(t)
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

// webOnAceAndG14 is a bus with the provisioner's buckets, the registry, and
// module web assigned (with a plan) to ace and g14.
func webOnAceAndG14(t *testing.T) jetstream.JetStream {
	t.Helper()
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensureRegistered(t, js)
	as := assignmentsKV(t, js)
	put(t, as, "ace.web", `{"provisioning":{}}`)
	put(t, as, "g14.web", `{"provisioning":{}}`)
	return js
}

// A waiting report may wait for what no need records: a secret its plan
// declares without a path and no template names (SPEC §5.2 records
// placeholders). Its files are written, its report says waiting for it,
// and the sweep named it nowhere and exited 0 however long it stood (an
// outside audit). Such a wait is judged as the need it stands for: kind
// and name as the report says, owner the registry's, counted among the
// needs; a wait whose need is recorded is judged by the need alone.
func TestASweepJudgesAReportsWaitThatNoNeedRecords(t *testing.T) {
	js := webOnAceAndG14(t)
	applied := bucket(t, js, spec.AppliedBucket)
	const why = `mesh-vault: own/web/unused absent (asked 3 times)`
	put(t, applied, "ace.web", `{"node":"ace","module":"web","state":"waiting","files":[{"path":"/etc/web/x.conf","action":"written","digest":"sha256:00"}],"waiting":[{"kind":"secret","name":"unused","why":"`+why+`"}]}`)
	// g14's wait has its need recorded: judged once, by the need
	put(t, applied, "g14.web", `{"node":"g14","module":"web","state":"waiting","files":[],"waiting":[{"kind":"config","name":"port","why":"not written yet"}]}`)
	put(t, bucket(t, js, spec.NeedsBucket), "g14.web.config.port", `{"node":"g14","module":"web","kind":"config","name":"port","state":"waiting","why":"not written yet"}`)

	res, err := sweep(testCtx(t), js, SweepParams{StoodAfter: 10 * time.Minute}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	r := res.reply
	if !r.Held() || r.Summary.Needs.StoodAsked != 2 || len(r.Findings) != 2 {
		t.Fatalf("held %v, summary %+v, findings %+v; want two stood asked (ace's secret, g14's config), held", r.Held(), r.Summary, r.Findings)
	}
	var secret *Finding
	for i, f := range r.Findings {
		if f.Kind == "secret" {
			secret = &r.Findings[i]
		}
		if f.Count != 1 {
			t.Errorf("finding %+v judged %d times", f, f.Count)
		}
	}
	if secret == nil || secret.Name != "unused" || secret.Owner != "mesh-vault" || secret.Verdict != VerdictStoodAsked ||
		secret.Why != why || len(secret.Needs) != 1 || secret.Needs[0] != (NodeModule{"ace", "web"}) {
		t.Fatalf("the secret's wait: %+v", secret)
	}
}

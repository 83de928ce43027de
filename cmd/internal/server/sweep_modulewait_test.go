package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

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
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	if _, _, err := PublishRegistry(testCtx(t), bucket(t, js, spec.RegistryBucket), Registry()); err != nil {
		t.Fatal(err)
	}
	as := assignmentsKV(t, js)
	put(t, as, "ace.web", `{"provisioning":{}}`)
	put(t, as, "g14.web", `{"provisioning":{}}`)
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

package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// What a run left under the node's own keys for a module no longer
// assigned to it, and a need of a placeholder its plan no longer names,
// are deleted once the client's first load is done (SPEC §4.7 r2), the
// module said removed on its event; another node's keys are not touched.
func TestAtStartTheClientDeletesWhatNoAssignedModuleOwns(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	need := func(node, module, kind, name string) string {
		b, _ := json.Marshal(map[string]string{"node": node, "module": module, "kind": kind, "name": name, "state": "met", "why": ""})
		return string(b)
	}
	m.put(spec.NeedsBucket, "ace.ghost.config.k", need("ace", "ghost", "config", "k"))
	m.put(spec.NeedsBucket, "ace.web.config.dropped", need("ace", "web", "config", "dropped"))
	m.put(spec.NeedsBucket, "g14.ghost.config.k", need("g14", "ghost", "config", "k"))
	m.put(spec.AppliedBucket, "ace.ghost", `{"node":"ace","module":"ghost","state":"applied","at":"2026-01-01T00:00:00Z","files":[]}`)
	m.put(spec.AppliedBucket, "g14.ghost", `{"node":"g14","module":"ghost","state":"applied","at":"2026-01-01T00:00:00Z","files":[]}`)
	m.put(spec.CollectBucket, "ace.shell=3Azsh=3Anormal.ghost", `{"collection":"shell:zsh:normal","contributor":"ghost","item":"x\n"}`)
	m.put(spec.CollectBucket, "g14.shell=3Azsh=3Anormal.ghost", `{"collection":"shell:zsh:normal","contributor":"ghost","item":"x\n"}`)
	sub, err := m.nc.SubscribeSync("prov.applied.ace.ghost")
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()

	m.client("ace")
	m.waitState("ace", "web", "applied")
	for _, k := range []struct{ bucket, key string }{
		{spec.NeedsBucket, "ace.ghost.config.k"}, {spec.NeedsBucket, "ace.web.config.dropped"},
		{spec.AppliedBucket, "ace.ghost"}, {spec.CollectBucket, "ace.shell=3Azsh=3Anormal.ghost"}} {
		m.waitGone(k.bucket, k.key)
	}
	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no removed report for ace.ghost: %v", err)
	}
	var r map[string]any
	if json.Unmarshal(msg.Data, &r); r["state"] != "removed" || r["node"] != "ace" || r["module"] != "ghost" {
		t.Errorf("ace.ghost's event %s, want it removed", msg.Data)
	}
	m.settle()
	for _, k := range []struct{ bucket, key string }{
		{spec.NeedsBucket, "g14.ghost.config.k"}, {spec.AppliedBucket, "g14.ghost"}, {spec.CollectBucket, "g14.shell=3Azsh=3Anormal.ghost"}} {
		if _, ok := m.get(k.bucket, k.key); !ok {
			t.Errorf("another node's key %s %s was deleted", k.bucket, k.key)
		}
	}
}

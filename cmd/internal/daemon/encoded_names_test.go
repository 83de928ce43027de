package daemon

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §2.1: node and module names are key tokens, encoded as any other
// name: a node "ace.lab" and a module "team.app" read their plan at
// ace=2Elab.team=2Eapp, their config at
// ace=2Elab.team=2Eapp.<encoded key>, and write their needs, report,
// event and item under their encoded names alone; the file is filled.
func TestNodeAndModuleNamesThatAreNoTokensAreEncodedEverywhere(t *testing.T) {
	m := newMesh(t)
	const node, module = "ace.lab", "team.app"
	m.put(spec.ConfigBucket, spec.EncodeKey(node, module, "db.url"), "pg://db")
	m.put(spec.ConfigBucket, spec.EncodeKey(node, module, "ünï"), "u")
	m.assign(node, module, nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/team/app.conf", Template: "conf"}},
		Items: []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "item"}},
	}, map[string]string{"conf": "db = ${config:db.url}\nu = ${config:ünï}\n", "item": "alias t=app\n"})
	events := m.subjects("prov.applied.>")
	m.client(node)

	m.waitFile("/etc/team/app.conf", "db = pg://db\nu = u\n")
	m.waitState(node, module, "applied") // at ace=2Elab.team=2Eapp
	m.settle()
	want := map[string][]string{
		spec.NeedsBucket:   {"ace=2Elab.team=2Eapp.config.db=2Eurl", "ace=2Elab.team=2Eapp.config.=C3=BCn=C3=AF"},
		spec.AppliedBucket: {"ace=2Elab.team=2Eapp"},
		spec.CollectBucket: {"ace=2Elab.shell=3Azsh=3Anormal.team=2Eapp"},
	}
	for b, keys := range want {
		got := m.keysUnder(b, "ace=2Elab.")
		slices.Sort(got)
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Errorf("%s: keys %q, want %q", b, got, keys)
		}
		if other := m.keysUnder(b, "ace."); len(other) > 0 {
			t.Errorf("%s: keys under the unencoded name: %q", b, other)
		}
	}
	v, _ := m.get(spec.NeedsBucket, "ace=2Elab.team=2Eapp.config.db=2Eurl")
	var need map[string]any
	json.Unmarshal([]byte(v), &need)
	if need["node"] != node || need["module"] != module || need["name"] != "db.url" {
		t.Errorf("need %s does not name the node, module and key as they are", v)
	}
	time.Sleep(100 * time.Millisecond)
	if got := events(); !slices.Contains(got, "prov.applied.ace=2Elab.team=2Eapp") || slices.ContainsFunc(got, func(s string) bool { return s != "prov.applied.ace=2Elab.team=2Eapp" }) {
		t.Errorf("events on %q, want prov.applied.ace=2Elab.team=2Eapp alone", got)
	}
}

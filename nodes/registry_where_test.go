package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Where a kind lives is its registry entry's bucket, verb, key and field
// (SPEC §6.1): an entry naming another of any of them, or another kind's
// entry at the kind's key, makes the kind wait, saying which; the table's
// own entry, or one that leaves a field out, is followed.
func TestARegistryEntryIsFollowedOnlyWhereItSaysWhatTheClientReads(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{Files: []FileSpec{{Path: "/etc/web", Template: "t"}},
		Placement: map[string]map[string]string{"dir": {"state": "/srv"}}}))
	m.SetArchive("web", digestA, map[string][]byte{"t": []byte("${config:model} ${dir:state}")})
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus"))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("with entries naming their kind alone: %v %q", v.State, v.Reason)
	}
	for _, c := range []struct{ kind, entry, says string }{
		{"config", `{"kind":"config","key":"<module>.<key>"}`,
			"the registry says kind config is at key <module>.<key>; this client reads it at <node>.<module>.<key>"},
		{"dir", `{"kind":"dir","field":"provisioning.placement.port"}`,
			"the registry says kind dir is field provisioning.placement.port; this client reads it from provisioning.placement.dir"},
		{"config", `{"kind":"secret","owner":"mesh-vault","verb":"mesh-vault.get"}`, "the registry's entry for kind config is kind secret's"},
	} {
		m.Put(spec.RegistryBucket, c.kind, []byte(c.entry))
		m.Stabilize()
		if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, c.says) {
			t.Errorf("%s = %s: %v %q, want waiting %q", c.kind, c.entry, v.State, v.Reason, c.says)
		}
		m.Put(spec.RegistryBucket, c.kind, []byte(`{"kind":"`+c.kind+`"}`))
	}
	for _, r := range spec.Kinds() { // the server's table, as it writes it
		e := `{"kind":"` + string(r.Kind) + `","owner":"` + r.Owner + `","verb":"` + r.Verb + `","bucket":"` + r.Bucket + `","key":"` + r.Key + `","field":"` + r.Field + `"}`
		m.Put(spec.RegistryBucket, string(r.Kind), []byte(e))
	}
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("with the table's entries: %v %q", v.State, v.Reason)
	}
}

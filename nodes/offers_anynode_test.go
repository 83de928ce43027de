package nodes

import (
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider's plan refused for what it requires itself (a provisions
// entry whose local cannot stand in a vault name) still offers what its
// provides say, on whatever node it is assigned: a consumer's binding is
// judged alike whether the provider sits on the consumer's node or not
// (SPEC §4.6 r2: the offers are read from the provider's plan "on
// whatever node it is assigned"; §3: a broken plan fails that module and
// leaves the others untouched).
func TestAProvidersPlanRefusedForItsProvisionsOffersOnAnyNode(t *testing.T) {
	for _, node := range []string{"ace", "novox"} {
		t.Run("provider on "+node, func(t *testing.T) {
			m := NewNodeGraph("ace")
			registryAll(m)
			m.Put(spec.AssignmentsBucket, node+".gitea", []byte(`{"provisioning":{
				"provisions":[{"provision":"p","provider":"x","credential":"t","local":"a/b"}],
				"provides":[{"provision":"forge-account","answered_by":"helper"},{"provision":"gitea-read","have":{"url":"https://have"}}]}}`))
			m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{
				Files:      []FileSpec{{Path: "/etc/cc/forge", Template: "forge"}},
				Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}}))
			m.SetArchive("cc", digestA, map[string][]byte{"forge": []byte("url = ${bound:gitea-read:url}\n")})
			m.Stabilize()
			v := m.View("cc")
			if v == nil || v.State != graph.Ready {
				t.Fatalf("cc: %+v", v)
			}
			if got := string(file(m, "cc", "/etc/cc/forge").Value.mustBytes()); got != "url = https://have\n" {
				t.Fatalf("forge %q", got)
			}
		})
	}
}

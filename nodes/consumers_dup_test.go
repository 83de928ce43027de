package nodes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A consumer's plan that lists the same provisions entry twice (provider,
// provision and local alike) is refused on its own node, and still binds
// (a refused plan binds its consumer), but once: ${consumers:X} lists one
// entry per consumer binding, and the two entries are one binding with
// one credential. Another local of the same provision is another holder,
// listed apart.
func TestAProvisionListedTwiceIsOneConsumerInTheProvidersList(t *testing.T) {
	for _, node := range []string{"ace", "g14"} { // the consumer on the provider's node and on another
		t.Run(node, func(t *testing.T) {
			m := NewNodeGraph("ace")
			registryAll(m)
			m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
				Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
			m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
			entry := ProvisionSpec{Provision: "gitea-read", Provider: "gitea", Credential: "token"}
			second := entry
			second.Local = "second"
			m.Put(spec.AssignmentsBucket, node+".cc", planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{entry, entry, second}}))
			m.SetSecret("pair/gitea/gitea-read/"+node+"/cc", []byte("s-1"), time.Time{})
			m.SetSecret("pair/gitea/gitea-read/"+node+"/cc/second", []byte("s-2"), time.Time{})
			m.Stabilize()
			if node == "ace" {
				if v := m.View("cc"); v == nil || v.State != graph.Failed || !strings.Contains(v.Reason, "is also required by provisions[0]") {
					t.Fatalf("the consumer's own module: %+v", v)
				}
			}
			f := file(m, "gitea", "/etc/gitea/consumers.json")
			var list []map[string]string
			if err := json.Unmarshal(f.Value.mustBytes(), &list); err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0]["local"] != "" || list[0]["value"] != "s-1" || list[1]["local"] != "second" || list[1]["value"] != "s-2" {
				t.Fatalf("consumers %s: want cc once, then cc/second", f.Value.mustBytes())
			}
		})
	}
}

package nodes

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// F7: a provider/provision pair no plan binds a consumer to any more leaves
// nothing behind, however many were ever named; a pair bound again is
// listed again.
func TestBindingsKeepNoPairNoPlanNames(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	consumer := func(node, provider, provision string) []byte {
		return planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{{Provision: provision, Provider: provider, Credential: "token"}}})
	}
	for i := range 200 {
		key := fmt.Sprintf("n-%d.cc", i)
		m.Put(spec.AssignmentsBucket, key, consumer(fmt.Sprint("n-", i), fmt.Sprint("prov-", i), fmt.Sprint("x-", i)))
		m.Delete(spec.AssignmentsBucket, key)
	}
	// A plan that moves from one provider to another leaves the first.
	m.Put(spec.AssignmentsBucket, "g14.cc", consumer("g14", "other", "x"))
	m.Put(spec.AssignmentsBucket, "g14.cc", consumer("g14", "gitea", "gitea-read"))
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"), time.Time{})
	m.Stabilize()
	if len(m.bindings) != 1 || len(m.bindings["gitea/gitea-read"]) != 1 {
		t.Fatalf("bindings hold %d pairs, want gitea/gitea-read alone (bound once)", len(m.bindings))
	}
	listed := func() int {
		t.Helper()
		var list []map[string]string
		if err := json.Unmarshal(file(m, "gitea", "/etc/gitea/consumers.json").Value.mustBytes(), &list); err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	if n := listed(); n != 1 {
		t.Fatalf("%d consumers listed, want 1", n)
	}
	m.Delete(spec.AssignmentsBucket, "g14.cc")
	m.Stabilize()
	if len(m.bindings) != 0 {
		t.Fatalf("bindings hold %d pairs once no plan binds a consumer", len(m.bindings))
	}
	if n := listed(); n != 0 {
		t.Fatalf("%d consumers listed once the last left, want 0", n)
	}
	m.Put(spec.AssignmentsBucket, "g14.cc", consumer("g14", "gitea", "gitea-read"))
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"), time.Time{})
	m.Stabilize()
	if n := listed(); n != 1 {
		t.Fatalf("%d consumers listed once bound again, want 1", n)
	}
}

package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider of two provisions: a consumer bound to one of them re-renders
// that provision's consumers file alone, and asks the vault for its one
// credential (SPEC §4.5).
func TestABindingToOneOfTwoProvisionsRefillsItsConsumersFileAlone(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/gitea/read.json", Template: "read"},
			{Path: "/etc/gitea/clone.json", Template: "clone"},
		},
		Provides: []nodes.Offer{{Provision: "gitea-read"}, {Provision: "gitea-clone"}},
	}, map[string]string{"read": "${consumers:gitea-read}", "clone": "${consumers:gitea-clone}"})
	v := m.devVault()
	clone := spec.PairSecretName("gitea", "gitea-clone", "g14", "cc", "")
	v.Set(t.Context(), clone, []byte("c-1"))
	m.client("ace")
	m.waitFile("/etc/gitea/read.json", "[]")
	m.waitFile("/etc/gitea/clone.json", "[]")
	m.waitState("ace", "gitea", "applied")
	m.settle()
	from, asks := m.fills.count(), len(v.Asks())

	m.assign("g14", "cc", nodes.Plan{Provisions: []nodes.ProvisionSpec{{Provision: "gitea-clone", Provider: "gitea", Credential: "token"}}}, nil)
	m.waitConsumers("/etc/gitea/clone.json", clone)
	m.settle()
	if got := m.fills.since(from); len(got) != 1 || got[0] != "/etc/gitea/clone.json" {
		t.Fatalf("sent %v, want only clone.json", got)
	}
	if got := v.Asks()[asks:]; len(got) != 1 || got[0].Secret != clone {
		t.Fatalf("asked %+v, want %s once", got, clone)
	}
	if text, _, _ := m.file("/etc/gitea/read.json"); text != "[]" {
		t.Fatalf("read.json %q", text)
	}
}

package nodes

import (
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An assignment written (any node's) names the consumers' credentials it
// binds that a consumers list of this node already reads, so that the
// vault's refusal of one is asked again; an entry binding a provision no
// list here reads names nothing.
func TestAnAssignmentWrittenNamesTheConsumersCredentialsThisNodeReads(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	cc := planJSON("g14", "cc", Plan{Provisions: []ProvisionSpec{
		{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: "x"},
		{Provision: "other-read", Provider: "other", Credential: "token"}}})
	m.Put(spec.AssignmentsBucket, "g14.cc", cc)
	m.Stabilize()
	want := []string{"pair/gitea/gitea-read/g14/cc/x"}
	if !m.WantsSecret(want[0]) {
		t.Fatalf("%s not read after the first put", want[0])
	}
	if c := m.Put(spec.AssignmentsBucket, "g14.cc", cc); !slices.Equal(c.Pairs, want) {
		t.Fatalf("written again: pairs %q, want %q", c.Pairs, want)
	}
	other := planJSON("g14", "dd", Plan{Provisions: []ProvisionSpec{{Provision: "other-read", Provider: "other", Credential: "token"}}})
	if c := m.Put(spec.AssignmentsBucket, "g14.dd", other); c.Pairs != nil {
		t.Fatalf("a plan binding no list of this node: pairs %q, want none", c.Pairs)
	}
}

package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §3 (r2): a provisions entry without its credential form fails its
// module, the reason naming the entry and the word credential; the module
// asks the vault nothing, and the other modules are untouched.
func TestAProvisionsEntryWithoutACredentialFailsItsModuleNamingIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.good", planJSON("ace", "good", Plan{Files: []FileSpec{{Path: "/etc/good", Template: "g"}}}))
	m.SetArchive("good", digestA, map[string][]byte{"g": []byte("fine\n")})
	ch := m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{
		Files: []FileSpec{{Path: "/etc/cc", Template: "t"}},
		Provisions: []ProvisionSpec{
			{Name: "read", Provision: "gitea-read", Provider: "gitea", Credential: "token"},
			{Name: "clone", Provision: "gitea-clone", Provider: "gitea", Path: "/etc/cc/clone"}}}))
	if ch.Refused == nil {
		t.Fatal("a provisions entry without a credential was taken")
	}
	m.Stabilize()
	want := "provisions[1] (gitea-clone): no credential"
	if v := m.View("cc"); v.State != graph.Failed || !strings.Contains(v.Reason, want) {
		t.Fatalf("cc %v %q, want failed saying %q", v.State, v.Reason, want)
	}
	if w := m.TakeNewSecrets(); len(w) != 0 {
		t.Errorf("a refused plan asked the vault for %v", w)
	}
	if v := m.View("good"); v.State != graph.Ready {
		t.Errorf("good %v %q", v.State, v.Reason)
	}
}

// A credential form of blanks alone is none: refused as a missing one,
// not sent to the vault as the form "  ".
func TestABlankCredentialIsNoCredential(t *testing.T) {
	for _, form := range []string{" ", "\t", "  \n"} {
		_, err := ParseAssignment("ace.cc", planJSON("ace", "cc", Plan{Provisions: []ProvisionSpec{
			{Provision: "gitea-read", Provider: "gitea", Credential: form}}}))
		if err == nil || !strings.Contains(err.Error(), "provisions[0] (gitea-read): no credential") {
			t.Errorf("credential %q: got %v, want it refused as no credential", form, err)
		}
	}
}

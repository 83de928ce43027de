package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// ${bound:X/L:K} whose provisions entry for X has another local (or none)
// fails naming the local: provisions[] does list X, and a reason saying it
// did not sent the operator looking for the wrong thing.
func TestABoundPlaceholderOfALocalNoEntryHasSaysTheLocal(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{
		Files:      []FileSpec{{Path: "/etc/cc/a", Template: "a"}, {Path: "/etc/cc/b", Template: "b"}},
		Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}))
	m.SetArchive("cc", digestA, map[string][]byte{"a": []byte("${bound:gitea-read/second:as}\n"), "b": []byte("${bound:other:as}\n")})
	m.Stabilize()
	v := m.View("cc")
	for _, want := range []string{
		"${bound:gitea-read/second:as} names provision gitea-read with local second, which provisions[] does not list",
		"${bound:other:as} names provision other which provisions[] does not list",
	} {
		if v.State != graph.Failed || !strings.Contains(v.Reason, want) {
			t.Errorf("%v %q does not say %q", v.State, v.Reason, want)
		}
	}
}

// The converse: ${bound:X:K} (no local) whose only provisions entry for X
// has a local fails saying so, not that provisions[] does not list X.
func TestABoundPlaceholderWithoutALocalWhoseEntryHasOneSaysSo(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{
		Files:      []FileSpec{{Path: "/etc/cc/a", Template: "a"}},
		Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: "two"}},
	}))
	m.SetArchive("cc", digestA, map[string][]byte{"a": []byte("${bound:gitea-read:as}\n")})
	m.Stabilize()
	v := m.View("cc")
	want := "${bound:gitea-read:as} names provision gitea-read with no local, which provisions[] does not list"
	if v.State != graph.Failed || !strings.Contains(v.Reason, want) {
		t.Errorf("%v %q does not say %q", v.State, v.Reason, want)
	}
}

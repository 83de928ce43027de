package nodes

import (
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.1: a placeholder's name runs to the next "}" and may hold ":";
// ${bound:X[/L]:K} takes K after the first ":" (ParseBoundName), so an
// offer's have key "db:port" is named by ${bound:pg:db:port}. The
// provider's plan is taken, and its consumer filled with the value.
func TestAHaveKeyHoldingAColonIsNamedByItsBoundPlaceholder(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	if r := m.Put(spec.AssignmentsBucket, "ace.pgm", []byte(`{"node":"ace","module":"pgm","provisioning":{"provides":[
		{"provision":"pg","have":{"db:port":"5432"}},{"provision":"other","answered_by":"helper"}]}}`)); r.Refused != nil {
		t.Fatalf("the provider's plan is refused: %v", r.Refused)
	}
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files:      []FileSpec{{Path: "/etc/web", Template: "t"}},
		Provisions: []ProvisionSpec{{Provision: "pg", Provider: "pgm", Credential: "token"}}}))
	m.SetArchive("web", digestA, map[string][]byte{"t": []byte("port=${bound:pg:db:port}\n")})
	m.Stabilize()
	if v := m.View("pgm"); v.State != graph.Ready {
		t.Fatalf("the provider: %v %q, want ready", v.State, v.Reason)
	}
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("the consumer: %v %q, want ready", v.State, v.Reason)
	}
	if got := string(file(m, "web", "/etc/web").Value.mustBytes()); got != "port=5432\n" {
		t.Fatalf("the consumer's file is %q, want %q", got, "port=5432\n")
	}
}

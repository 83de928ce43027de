package daemon

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// A module assigned to the node without a provisioning plan (SPEC §3 r2:
// not the provisioner's) is assigned: explain and graph dot say so, as
// prov.ask does, rather than that it is not on the node, which sends an
// operator to look for an assignment that is there. Before, both answered
// "module other is not on node ace".
func TestExplainAndDotSayAModuleAssignedWithoutAPlanIsAssigned(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.AssignmentsBucket, "ace.other", `{"node":"ace","module":"other","owner":"someone"}`)
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	m.settle()
	for _, path := range []string{"/v1/explain?module=other", "/v1/graph.dot?module=other"} {
		code, b := ctlGet(t, sock, path)
		var e control.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusNotFound {
			t.Fatalf("%s: %d %s", path, code, b)
		}
		want := `module other is assigned to node ace without a provisioning plan (its assignment carries no "provisioning"): the provisioner fills nothing for it; modules on node ace: web`
		if e.Error != want || e.Node != "ace" || len(e.Modules) != 1 || e.Modules[0] != "web" {
			t.Fatalf("%s: %s\nwant the error %q", path, b, want)
		}
	}
	// A module not assigned at all is still said not on the node.
	if code, b := ctlGet(t, sock, "/v1/explain?module=ghost"); code != http.StatusNotFound || !contains(string(b), "module ghost is not on node ace; modules on node ace: web") {
		t.Fatalf("ghost: %d %s", code, b)
	}
}

package daemon

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An assignment without "provisioning" is another domain's whatever its
// key's names (SPEC §3 r2: no report, no needs, no event): a module named
// "team/app", or longer than a vault name or a need key could hold, is
// ignored when its value carries no plan, and refused (failed, naming why)
// only when it does. Before, the names were judged first, and another
// domain's module "team/app" got a failed report and events.
func TestAnAssignmentWithoutProvisioningIsIgnoredWhateverItsNames(t *testing.T) {
	m := newMesh(t)
	events := m.appliedEvents("ace")
	long := strings.Repeat("m", 300)
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", "team/app"), `{"node":"ace","module":"team/app","runs":{"unit":"app.service"}}`)
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", ".."), `{"runs":{}}`)
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", long), `{"runs":{}}`)
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", "team/planned"), `{"provisioning":{}}`)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.waitFailed("ace", "team/planned", `holds "/"`)
	m.settle()
	for _, mod := range []string{"team/app", "..", long} {
		if r, ok := m.report("ace", mod); ok {
			t.Errorf("%.20s… has a report: %v", mod, r)
		}
	}
	for _, s := range events() {
		if s != "prov.applied.ace.web" && s != "prov.applied."+spec.EncodeKey("ace", "team/planned") {
			t.Errorf("event on %.60s…", s)
		}
	}
}

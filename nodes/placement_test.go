package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.1: a placement name the plan does not hold is waited for (the
// controller may add it), not failed; once the plan holds it the file is
// filled (an empty value is a value), and a plan that drops it again waits
// again, naming it.
func TestAPlacementNameNotInThePlanIsWaitedForUntilTheControllerAddsIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	put := func(placement map[string]map[string]string) {
		t.Helper()
		if ch := m.Put(spec.AssignmentsBucket, "ace.w", planJSON("ace", "w", Plan{
			Files: []FileSpec{{Path: "/etc/w", Template: "t"}}, Placement: placement})); ch.Refused != nil {
			t.Fatal(ch.Refused)
		}
		m.Stabilize()
	}
	waits := func(names ...string) {
		t.Helper()
		v := m.View("w")
		if v.State != graph.Waiting {
			t.Fatalf("w %v %q, want waiting", v.State, v.Reason)
		}
		for _, n := range names {
			if want := "placement." + n + " is not in the plan of w (the controller may add it)"; !strings.Contains(v.Reason, want) {
				t.Errorf("w's reason %q does not say %q", v.Reason, want)
			}
		}
		if f := file(m, "w", "/etc/w"); f.Value != nil {
			t.Errorf("a file was rendered while a placement name is missing: %q", f.Value.mustBytes())
		}
	}
	put(nil) // no placement at all
	m.SetArchive("w", digestA, map[string][]byte{"t": []byte("port=${port:http} host=${machine:name}\n")})
	m.Stabilize()
	waits("port.http", "machine.name")
	put(map[string]map[string]string{"machine": {"name": "ace"}, "port": {"https": "443"}})
	waits("port.http")
	put(map[string]map[string]string{"machine": {"name": "ace"}, "port": {"http": ""}})
	if f := file(m, "w", "/etc/w"); f.Value == nil || string(f.Value.mustBytes()) != "port= host=ace\n" {
		t.Fatalf("w's file %+v, want it filled once the plan holds every name", f)
	}
	put(map[string]map[string]string{"port": {"http": "8080"}})
	waits("machine.name")
}

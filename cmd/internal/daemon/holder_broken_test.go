package daemon

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module holding a path whose plan is refused for a while (it does not
// parse, or breaks a rule) keeps the path: it writes and removes nothing
// meanwhile, and the node-engine still holds its files. Before, its claim
// went with its plan: the module naming the same path took it (and was
// refused by the node-engine, 409), and the holder, its plan fixed, came
// back second and failed for good, so neither was applied until the
// client restarted (SPEC §3: fixed, everything recovers with no restart).
func TestAHolderWhosePlanIsRefusedAWhileKeepsItsPathWhenFixed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	holder := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service")}}
	m.assign("ace", "a", holder, map[string]string{"c": "from a\n"})
	m.client("ace", f.socket, refillEvery(200*time.Millisecond))
	m.waitFile("/etc/p1", "from a\n")
	m.waitState("ace", "a", "applied")
	m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "b.service")}}, map[string]string{"c": "from b\n"})
	m.waitFailed("ace", "b", "owned by module a (taken first)")
	good, _ := m.get(spec.AssignmentsBucket, "ace.a")

	for _, broken := range []string{
		`{"provisioning":{`, // does not parse
		`{"provisioning":{"files":[{"path":"/etc/p1","template":"c","mode":"999"}]}}`, // breaks a rule
	} {
		m.put(spec.AssignmentsBucket, "ace.a", broken)
		m.waitState("ace", "a", "failed")
		m.settle()
		if r, _ := m.report("ace", "b"); !contains(r["reason"].(string), "owned by module a (taken first)") {
			t.Errorf("while a's plan is refused, b: %v", r)
		}
		m.put(spec.AssignmentsBucket, "ace.a", good)
		m.waitState("ace", "a", "applied")
		m.waitFailed("ace", "b", "owned by module a (taken first)")
		if got, _, _ := m.file("/etc/p1"); got != "from a\n" {
			t.Errorf("/etc/p1 is %q", got)
		}
	}

	// Taken off the node, a lets go: b takes the path.
	m.del(spec.AssignmentsBucket, "ace.a")
	m.waitFile("/etc/p1", "from b\n")
	m.waitState("ace", "b", "applied")
}

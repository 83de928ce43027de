package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// clashPlan is a plan writing each path in the form given (static templates).
func clashPlan(m *NodeGraph, mod string, forms map[string]string) {
	var p Plan
	tmpl := map[string][]byte{}
	for path, form := range forms {
		p.Files = append(p.Files, FileSpec{Path: path, Template: "t", Form: form})
	}
	tmpl["t"] = []byte("x\n")
	if c := m.Put(spec.AssignmentsBucket, "ace."+mod, planJSON("ace", mod, p)); c.Refused != nil {
		panic(c.Refused)
	}
	m.SetArchive(mod, digestA, tmpl)
}

func TestAClashAtStartFailsTheModuleLaterByName(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	clashPlan(m, "web", map[string]string{"/etc/x": "owned"})
	clashPlan(m, "api", map[string]string{"/etc/x": "seed"})
	clashPlan(m, "blk1", map[string]string{"/etc/b": "managed-block", "/etc/k": "managed-keys"})
	clashPlan(m, "blk2", map[string]string{"/etc/b": "managed-block", "/etc/k": "managed-keys"})
	m.Stabilize()
	if v := m.View("api"); v.State != graph.Ready {
		t.Fatalf("api (first by name at start): %v %q", v.State, v.Reason)
	}
	v := m.View("web")
	if v.State != graph.Failed || !strings.Contains(v.Reason, "/etc/x") || !strings.Contains(v.Reason, "module web") ||
		!strings.Contains(v.Reason, "module api") {
		t.Fatalf("web: %v %q", v.State, v.Reason)
	}
	for _, mod := range []string{"blk1", "blk2"} {
		if v := m.View(mod); v.State != graph.Ready {
			t.Fatalf("%s shares managed paths: %v %q", mod, v.State, v.Reason)
		}
	}

	// After start, the module taken later fails, whatever its name; and a
	// module owning a shared managed path is refused too.
	clashPlan(m, "aaa", map[string]string{"/etc/b": "owned"})
	m.Stabilize()
	if v := m.View("aaa"); v.State != graph.Failed || !strings.Contains(v.Reason, "module blk1") {
		t.Fatalf("aaa: %v %q", v.State, v.Reason)
	}
	if v := m.View("blk1"); v.State != graph.Ready {
		t.Fatalf("blk1: %v %q", v.State, v.Reason)
	}

	// The first module leaving frees the path: the second is built again.
	if c := m.Delete(spec.AssignmentsBucket, "ace.api"); c.Removed != "api" {
		t.Fatalf("removing api: %+v", c)
	}
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("web after api left: %v %q", v.State, v.Reason)
	}
	// The first dropping the path from its plan frees it too.
	clashPlan(m, "blk1", map[string]string{"/etc/k": "managed-keys"})
	clashPlan(m, "blk2", map[string]string{"/etc/k": "managed-keys"})
	m.Stabilize()
	if v := m.View("aaa"); v.State != graph.Ready {
		t.Fatalf("aaa after the blocks left /etc/b: %v %q", v.State, v.Reason)
	}
}

// The node-engine's word on who holds a path (Holds: its 409 named the
// holder) puts the holder's claim first when the holder still names the
// path; a holder whose plan no longer names it (its next whole request
// lets go) or that is not on the node is left alone.
func TestTheNodeEnginesHolderOfAPathComesFirst(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	clashPlan(m, "web", map[string]string{"/etc/x": "owned"})
	clashPlan(m, "mover", map[string]string{"/etc/y": "owned"})
	m.Stabilize()
	clashPlan(m, "late", map[string]string{"/etc/x": "owned"})
	m.Stabilize()
	if v := m.View("late"); v.State != graph.Failed || !strings.Contains(v.Reason, "module web (taken first)") {
		t.Fatalf("late: %v %q", v.State, v.Reason)
	}

	m.Holds(map[string]string{"/etc/x": "mover"}) // mover names /etc/y alone
	m.Holds(map[string]string{"/etc/x": "gone"})  // no module of the node
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("web, after a holder not naming its path: %v %q", v.State, v.Reason)
	}

	m.Holds(map[string]string{"/etc/x": "late"})
	m.Stabilize()
	if v := m.View("late"); v.State != graph.Ready {
		t.Fatalf("late, the node-engine's holder: %v %q", v.State, v.Reason)
	}
	if v := m.View("web"); v.State != graph.Failed || !strings.Contains(v.Reason, "module late (taken first)") {
		t.Fatalf("web: %v %q", v.State, v.Reason)
	}
}

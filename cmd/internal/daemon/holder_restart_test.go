package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module holding a path at the node-engine whose plan is refused when
// the client starts keeps the path (SPEC §4.3: one owner per path, the
// node-engine's declarations are who holds it). Before, the client's
// clash check knew nothing of the refused module's claim after the
// restart, so the module naming the same path took it in the client's
// eyes and was refused by mesh-fill (409, naming the holder) at every
// tick; the holder, its plan fixed, then came second and failed "taken
// first" by it: neither applied until another restart.
func TestAHolderWhosePlanIsRefusedAtARestartKeepsItsPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		whileUp bool // a's plan breaks while the client runs (its report then lists no file)
		removeA bool // a is taken off the node while still refused, instead of being fixed
		// fixedFirst: mesh-fill is down when the client starts, and a's
		// plan is fixed before b's next fill reaches it (so a comes second
		// in the client's order until mesh-fill's 409 to b names a).
		fixedFirst bool
	}{
		{name: "broken while the client runs, then fixed", whileUp: true},
		{name: "broken while the client is down, then fixed"},
		{name: "broken, then taken off the node", whileUp: true, removeA: true},
		{name: "broken, fixed before b's next fill", whileUp: true, fixedFirst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMesh(t)
			f := m.stateFill()
			state := t.TempDir()
			inState := func(c *Config) { c.StateDir = state }
			m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service")}}, map[string]string{"c": "from a\n"})
			_, stop := m.startClient("ace", f.socket, inState)
			m.waitFile("/etc/p1", "from a\n")
			m.waitState("ace", "a", "applied")
			m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "b.service")}}, map[string]string{"c": "from b\n"})
			m.waitFailed("ace", "b", "module a (taken first)")
			good, _ := m.get(spec.AssignmentsBucket, "ace.a")
			const garbage = `{"provisioning":{"files":[{"path":"/etc/p1","templ`
			if tc.whileUp {
				m.put(spec.AssignmentsBucket, "ace.a", garbage)
				m.waitState("ace", "a", "failed")
				m.settle()
			}
			stop()
			if tc.fixedFirst {
				f.stop()
			}
			if !tc.whileUp {
				m.put(spec.AssignmentsBucket, "ace.a", garbage)
			}

			d := m.client("ace", f.socket, inState, refillEvery(300*time.Millisecond))
			bustest.Eventually(t, 10*time.Second, func() error {
				if !d.ready.Load() {
					return errors.New("the restarted client's first load is not done")
				}
				return nil
			})
			m.settle() // its first fills answered
			if tc.fixedFirst {
				m.waitFailed("ace", "b", "not answering")
				m.put(spec.AssignmentsBucket, "ace.a", good)
				m.settle()
				f.start()
				m.waitState("ace", "a", "applied")
				m.waitFailed("ace", "b", "module a (taken first)")
				m.settle()
				if got, _, _ := m.file("/etc/p1"); got != "from a\n" {
					t.Errorf("a fixed, /etc/p1 is %q", got)
				}
				if r, _ := m.report("ace", "a"); r["state"] != "applied" {
					t.Errorf("a fixed, after settling: %v", r)
				}
				return
			}
			m.waitState("ace", "a", "failed")
			m.waitFailed("ace", "b", "module a (taken first)")
			m.settle()
			if got, _, _ := m.file("/etc/p1"); got != "from a\n" {
				t.Errorf("while a's plan is refused, /etc/p1 is %q", got)
			}

			if tc.removeA {
				// Taken off the node, a lets go: b takes the path.
				m.del(spec.AssignmentsBucket, "ace.a")
				m.waitFile("/etc/p1", "from b\n")
				m.waitState("ace", "b", "applied")
				return
			}
			m.put(spec.AssignmentsBucket, "ace.a", good)
			m.waitState("ace", "a", "applied")
			m.waitFailed("ace", "b", "module a (taken first)")
			m.settle()
			if got, _, _ := m.file("/etc/p1"); got != "from a\n" {
				t.Errorf("a fixed, /etc/p1 is %q", got)
			}
			if r, _ := m.report("ace", "a"); r["state"] != "applied" {
				t.Errorf("a fixed, after settling: %v", r)
			}
			if r, _ := m.report("ace", "b"); r["state"] != "failed" || !contains(r["reason"].(string), "module a (taken first)") {
				t.Errorf("a fixed, after settling, b: %v", r)
			}
		})
	}
}

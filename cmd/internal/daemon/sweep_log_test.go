package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// logLines are the log lines of module whose message is msg, parsed.
func (m *mesh) logLines(module, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(m.logs.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(l), &e) == nil && e["module"] == module && e["message"] == msg {
			out = append(out, e)
		}
	}
	return out
}

// A module that left while the client was down is removed at start (SPEC
// §4.7 r2): its removed report is a change of its state, and the log says
// it as for one leaving while the client runs, one event naming the module
// (§5.1: one event per state change of a module), and from which state.
// Before, one line listed every module gone ("deleted keys of modules no
// longer on this node"): a search of the log for the module's events found
// it applied, and nothing after.
func TestAModuleRemovedAtStartIsLoggedAsRemovedByName(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.goneModule()
	_, stop := m.startClient("ace")
	m.waitState("ace", "gone", "applied")
	m.waitState("ace", "web", "applied")
	stop()
	m.del(spec.AssignmentsBucket, "ace.gone")
	m.put(spec.AppliedBucket, "ace.stray", `{"node":"ace","module":"stray","state":"failed","reason":"x"}`)

	m.client("ace")
	m.waitGone(spec.AppliedBucket, "ace.gone")
	m.waitGone(spec.AppliedBucket, "ace.stray")
	bustest.Eventually(t, 10*time.Second, func() error {
		for mod, was := range map[string]string{"gone": "applied", "stray": "failed"} {
			ls := m.logLines(mod, "module removed")
			if len(ls) != 1 || ls[0]["state"] != "removed" || ls[0]["was"] != was {
				return fmt.Errorf("%s: removed log lines %v, want one from %s", mod, ls, was)
			}
		}
		return nil
	})
	if ls := m.logLines("web", "module removed"); len(ls) != 0 {
		t.Fatalf("a module still here logged removed: %v", ls)
	}
}

// A module taken off the node while the client runs is logged removed
// once, saying from which state, as every other state change says it.
func TestAModuleTakenOffIsLoggedRemovedOnceSayingFromWhichState(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.goneModule()
	m.client("ace")
	m.waitState("ace", "gone", "applied")
	m.del(spec.AssignmentsBucket, "ace.gone")
	m.waitGone(spec.AppliedBucket, "ace.gone")
	m.settle()
	if ls := m.logLines("gone", "module removed"); len(ls) != 1 || ls[0]["state"] != "removed" || ls[0]["was"] != "applied" {
		t.Fatalf("removed log lines %v, want one from applied", ls)
	}
}

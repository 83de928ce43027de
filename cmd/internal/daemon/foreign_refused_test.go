package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Every client reads every node's plans (SPEC §2.2), so another node's
// broken plan is read by each client of the mesh, and again at each of
// their reconnects. Its own node's client says it (the module fails with
// the reason, §3, §5.3); the others said it as a warning too: one broken
// plan was a warning on every node of the fleet, again at every re-read,
// though nothing of those nodes changed (SPEC §5.1: one event per state
// change of a module). They say it at debug level; this node's own broken
// plan stays a warning.
func TestAnotherNodesBrokenPlanIsNoWarningHere(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/web/c.conf", Template: "c"}}},
		map[string]string{"c": "web\n"})
	m.put(spec.AssignmentsBucket, "g14.cc", `{"provisioning": {"provisions": 7}}`) // does not parse
	m.put(spec.AssignmentsBucket, "ace.cc", `{"provisioning": {"files": 7}}`)      // this node's: fails its module
	d, stop := m.startClient("ace")
	m.waitFile("/etc/web/c.conf", "web\n")
	m.waitState("ace", "cc", "failed")
	d.events <- reconnected{} // read again
	time.Sleep(time.Second)
	m.waitState("ace", "web", "applied")
	stop()
	var ace int
	for _, line := range strings.Split(m.logs.String(), "\n") {
		switch {
		case strings.Contains(line, `"key":"g14.cc"`) && strings.Contains(line, `"level":"warn"`):
			t.Errorf("another node's broken plan said as a warning here: %s", line)
		case strings.Contains(line, `"module":"cc"`) && strings.Contains(line, `"level":"warn"`) &&
			strings.Contains(line, "module failed"): // said once, as its state changes (TestABrokenPlanIsOneLogEventNotOnePerRead)
			ace++
		}
	}
	if ace == 0 {
		t.Errorf("this node's broken plan not said as a warning:\n%s", m.logs.String())
	}
}

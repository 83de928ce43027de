package daemon

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module taken off the node while the client was down has left it as
// much as one taken off while it runs: once the start's clean-up finds
// it, prov.changed says it is gone (SPEC §5.4 r2: {"kind": "config",
// "gone": true} when it leaves), so a tool runner that holds its config
// values lets them go, and a module still assigned is told it may have
// moved ({"kind": "config"}), as at every start.
func TestAModuleThatLeftWhileTheClientWasDownIsSaidGoneAtStart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	m.assign("ace", "late", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/late.conf", "k", "")}}, map[string]string{"k": "k\n"})
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "late", "applied")
	m.waitState("ace", "web", "applied")
	m.settle()
	stop()

	m.del(spec.AssignmentsBucket, "ace.late")
	sub, err := m.nc.SubscribeSync("prov.changed.ace.>")
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	m.client("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitNoFile("/etc/late.conf")
	m.waitGone(spec.AppliedBucket, "ace.late")
	m.settle()
	got := map[string]string{}
	for {
		msg, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if _, dup := got[msg.Subject]; dup {
			t.Errorf("%s published twice: %s, then %s", msg.Subject, got[msg.Subject], msg.Data)
		}
		got[msg.Subject] = string(msg.Data)
	}
	if got["prov.changed.ace.late"] != `{"gone":true,"kind":"config"}` {
		t.Errorf("the module that left while the client was down: prov.changed %q, want it said gone", got["prov.changed.ace.late"])
	}
	if got["prov.changed.ace.web"] != `{"kind":"config"}` {
		t.Errorf("the module still assigned: prov.changed %q", got["prov.changed.ace.web"])
	}
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// One key of a module gone whose delete the bus refuses (a rights mistake
// narrowing one subject) holds nothing else back at the start: the other
// buckets' keys of that module are deleted, its removed report goes, and
// the live modules are filled and follow their changes at once. Before,
// each delete waited its ack through the start's whole Sweep deadline
// (10 s, in the daemon's loop): the first fill waited 30 s for the
// buckets "not read", the applied key stayed "applied" with no removed
// report, and every change took seconds while the Sweep was tried again
// at each retry tick (an outside audit). The refused key is deleted once
// the rights are back (SPEC §4.7 r2).
func TestARefusedDeleteOfTheStartsSweepHoldsNothingElseBack(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.db.host", "h1")
	m.assign("ace", "db", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/db/db.conf", "conf", "")}},
		map[string]string{"conf": "host=${config:host}\n"})
	state := t.TempDir()
	inState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", asUser("provisioner-ace"), inState)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "db", "applied")
	stop()

	m.del(spec.AssignmentsBucket, "ace.db")
	refused := "$KV." + spec.NeedsBucket + ".ace.db.>"
	m.changeRights("provisioner-ace", refused)
	m.client("ace", asUser("provisioner-ace"), inState)
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.waitFileFor("/etc/web/a.conf", "model = haiku\nport = 8080\n", 5*time.Second)
	bustest.Eventually(t, 5*time.Second, func() error {
		if r, ok := m.report("ace", "db"); ok {
			return fmt.Errorf("db's report is still there: %v", r)
		}
		return nil
	})
	if _, ok := m.get(spec.NeedsBucket, "ace.db.config.host"); !ok {
		t.Fatal("db's need went though the bus refused its delete")
	}

	m.changeRights("provisioner-ace")
	bustest.Eventually(t, 30*time.Second, func() error {
		if v, ok := m.get(spec.NeedsBucket, "ace.db.config.host"); ok {
			return fmt.Errorf("db's need is still there once the rights are back: %s", v)
		}
		return nil
	})
}

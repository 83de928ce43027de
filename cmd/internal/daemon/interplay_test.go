package daemon

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module that leaves, comes back and leaves again while its request is
// still with the node-engine (a slow or hung fill socket) is said gone
// each time it leaves (SPEC §5.4 r2): a tool runner told it was assigned
// again must hear that it left again.
func TestAModuleLeavingTwiceWhileItsFillIsInFlightIsSaidGoneTwice(t *testing.T) {
	m := newMesh(t)
	hang, reached := hangingFill(t)
	m.webModule()
	m.client("ace", fillSocket(hang))
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("no fill reached the socket")
	}
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.web")
	m.nc.Flush()
	next := func(want string) {
		t.Helper()
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil || string(msg.Data) != want {
			t.Fatalf("heard %v %v, want %s", msg, err, want)
		}
	}
	m.del(spec.AssignmentsBucket, "ace.web")
	next(`{"gone":true,"kind":"config"}`)
	m.assign("ace", "web", webPlan(), webTemplates)
	next(`{"kind":"config"}`)
	m.del(spec.AssignmentsBucket, "ace.web")
	next(`{"gone":true,"kind":"config"}`)
}

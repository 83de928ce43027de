package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Two modules share a managed-block file. A value of one moves its block,
// and so the whole file, whose digest both reports say. The other's
// report said the old digest until its next whole request, the refill
// tick, which changed nothing on disk and yet rewrote its report and
// published its event (an outside audit; SPEC §5.3: a refill tick that
// changes nothing on disk rewrites no report). It is written with the
// change, saying the file's new digest (no tick comes here: the refill
// is an hour), once; a tick then finds it as it is.
func TestAModuleSharingAFileIsReportedWithTheChangeNotAtTheNextTick(t *testing.T) {
	m := newMesh(t)
	for _, mod := range []string{"a", "b"} {
		m.put(spec.ConfigBucket, "ace."+mod+".v", "1")
		m.assign("ace", mod, nodes.Plan{Files: []nodes.FileSpec{
			{Path: "/etc/shared/hosts", Template: "block", Form: "managed-block"},
		}}, map[string]string{"block": mod + " ${config:v}\n"})
	}
	m.client("ace") // refill: an hour
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")
	digestOf := func(module string) string {
		r, _ := m.report("ace", module)
		files, _ := r["files"].([]any)
		if len(files) != 1 {
			return ""
		}
		d, _ := files[0].(map[string]any)["digest"].(string)
		return d
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if a, b := digestOf("a"), digestOf("b"); a == "" || a != b {
			return fmt.Errorf("a's report says %q, b's %q", a, b)
		}
		return nil
	})
	events := make(chan *nats.Msg, 64)
	sub, err := m.nc.ChanSubscribe(spec.AppliedSubject("ace", "b"), events)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.nc.Flush()

	m.put(spec.ConfigBucket, "ace.a.v", "2")
	bustest.Eventually(t, 10*time.Second, func() error {
		got, _, _ := m.file("/etc/shared/hosts")
		if a, b := digestOf("a"), digestOf("b"); a != b || got == "" || !contains(got, "a 2\n") {
			return fmt.Errorf("a's report says %q, b's %q; the file is %q", a, b, got)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // a second report of b would be put by now
	if n := len(events); n != 1 {
		t.Fatalf("%d events of b for the change, want 1", n)
	}
}

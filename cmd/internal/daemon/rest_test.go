package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// waitTickAsleep waits until d's retry tick has found nothing to do and
// stopped (loop.go): the client at rest wakes for nothing of its own.
func waitTickAsleep(t *testing.T, d *Daemon) {
	t.Helper()
	bustest.Eventually(t, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ticking := true
		if err := d.Do(ctx, func(*nodes.NodeGraph) { ticking = d.ticking }); err != nil {
			return err
		}
		if ticking {
			return errors.New("the retry tick is still armed")
		}
		return nil
	})
}

// A client at rest lets its retry tick sleep, and a fill that fails after
// that still wakes it: the file is filled once the socket is back, with
// no further change, and the tick sleeps again once all is applied.
func TestAFillFailingAfterTheRetryTickSleptIsRetriedWhenTheSocketIsBack(t *testing.T) {
	m := newMesh(t)
	f := m.faultFill(0)
	m.webModule()
	d := m.client("ace", f.socket)
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	m.waitState("ace", "web", "applied")
	waitTickAsleep(t, d)

	f.stop()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitState("ace", "web", "failed")
	time.Sleep(300 * time.Millisecond) // a few retry ticks (Recheck 100 ms) against a dead socket
	if got, _, _ := m.file("/etc/web/c.conf"); got != "flavour = vanilla\n" {
		t.Fatalf("c.conf %q while the socket was down", got)
	}

	f.start()
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitState("ace", "web", "applied")
	waitTickAsleep(t, d)
}

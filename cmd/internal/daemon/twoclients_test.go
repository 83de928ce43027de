package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Two clients started for one node, each with a state dir of its own
// (another host given the same --node, a cloned machine, a second unit):
// both filled every change and overwrote each other's reports, and
// nothing said so (an outside audit: /healthz ok on both). A report put
// over another's is refused for its sequence and said: an error line, and
// /healthz names the module and asks whether a second client runs.
func TestTwoClientsForOneNodeAreSaid(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	a := m.client("ace")
	m.waitState("ace", "web", "applied")
	b := m.client("ace")
	for i := range 20 {
		m.put(spec.ConfigBucket, "ace.web.model", fmt.Sprint("model-", i))
		time.Sleep(50 * time.Millisecond)
	}
	said := func() string {
		for _, d := range []*Daemon{a, b} {
			for _, why := range d.notReady() {
				if strings.Contains(why, "second client") {
					return why
				}
			}
		}
		return ""
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if said() == "" {
			return fmt.Errorf("neither client says a second one writes the node's reports")
		}
		return nil
	})
	if why := said(); !strings.Contains(why, `"web"`) || !strings.Contains(why, `"ace"`) {
		t.Errorf("healthz says %q", why)
	}
	if !strings.Contains(m.logs.String(), `"level":"error"`) || !strings.Contains(m.logs.String(), "is a second client running for node") {
		t.Errorf("no error line says so:\n%s", m.logs.String())
	}
}

// One client whose reports move at every change, restarted, and its bus
// gone and back, says nothing of a second client.
func TestOneClientSaysNoSecondClient(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	_, stop := m.startClient("ace")
	m.waitState("ace", "web", "applied")
	stop()
	d := m.client("ace")
	for i := range 10 {
		m.put(spec.ConfigBucket, "ace.web.model", fmt.Sprint("model-", i))
		time.Sleep(30 * time.Millisecond)
	}
	m.busDown()
	time.Sleep(200 * time.Millisecond)
	m.busUp()
	for i := range 10 {
		m.put(spec.ConfigBucket, "ace.web.model", fmt.Sprint("again-", i))
		time.Sleep(30 * time.Millisecond)
	}
	m.waitFile("/etc/web/a.conf", "model = again-9\nport = 8080\n")
	m.settle()
	if strings.Contains(m.logs.String(), "second client") {
		t.Errorf("one client says a second one runs:\n%s", m.logs.String())
	}
	for _, why := range d.notReady() {
		if strings.Contains(why, "second client") {
			t.Errorf("healthz says %q", why)
		}
	}
}

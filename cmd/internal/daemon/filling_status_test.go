package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// fillGate is a fillProxy that holds every fill request until the
// returned release is called: a node-engine slow to answer (a restart that
// takes its time).
func (m *mesh) fillGate(to string) (sock string, release func()) {
	m.t.Helper()
	open := make(chan struct{})
	sock = m.fillProxy("gate.sock", to, func(r *http.Request) {
		if r.Method == http.MethodPost {
			<-open
		}
	}, func(*http.Request) {})
	var once sync.Once
	return sock, func() { once.Do(func() { close(open) }) }
}

// While a module's first fill is with the node-engine, not answered yet,
// the control socket does not say it applied ahead of its report (which
// still says waiting): it says waiting, filling. Once the fill is
// answered both say applied.
func TestAModuleWhoseFillIsNotAnsweredYetIsNotSaidAppliedOnTheControlSocket(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	gate, release := m.fillGate(m.sock)
	defer release()
	ctl := ctlSock(t)
	m.client("ace", withControl(ctl), func(c *Config) { c.FillSocket = gate })
	status := func() (control.ModuleStatus, error) {
		code, b, err := ctlTry(ctl, "/v1/modules")
		if err != nil || code != http.StatusOK {
			return control.ModuleStatus{}, fmt.Errorf("/v1/modules: %d %v", code, err)
		}
		var ms control.Modules
		if err := json.Unmarshal(b, &ms); err != nil {
			return control.ModuleStatus{}, err
		}
		for _, s := range ms.Modules {
			if s.Module == "web" {
				return s, nil
			}
		}
		return control.ModuleStatus{}, fmt.Errorf("no web in %s", b)
	}
	// Every value there, the fill held at the gate.
	bustest.Eventually(t, 10*time.Second, func() error {
		s, err := status()
		if err != nil {
			return err
		}
		if s.FilesMet != s.Files || s.Files == 0 {
			return fmt.Errorf("web: %d of %d files met", s.FilesMet, s.Files)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	s, err := status()
	if err != nil {
		t.Fatal(err)
	}
	if s.State != "waiting" || s.Reason != control.Filling {
		t.Fatalf("web on the control socket while its fill is not answered: %s %q, want waiting %q", s.State, s.Reason, control.Filling)
	}
	if r, ok := m.report("ace", "web"); ok && r["state"] == "applied" {
		t.Fatalf("web reported applied before its fill was answered: %v", r)
	}
	release()
	m.waitState("ace", "web", "applied")
	bustest.Eventually(t, 10*time.Second, func() error {
		s, err := status()
		if err != nil {
			return err
		}
		if s.State != "applied" {
			return fmt.Errorf("web %s %q once filled", s.State, s.Reason)
		}
		return nil
	})
}

// A fill the node-engine does not answer within Config.FillTimeout (run's
// --fill-timeout) fails its module "not answering within" it, and the
// module is filled once the node-engine answers again.
func TestAFillNotAnsweredWithinTheFillTimeoutFailsItsModule(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	gate, release := m.fillGate(m.sock)
	defer release()
	m.client("ace", func(c *Config) { c.FillSocket, c.FillTimeout = gate, time.Second })
	r := m.waitState("ace", "web", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "not answering within 1s") {
		t.Fatalf("web failed with %q, want not answering within the 1s fill timeout", why)
	}
	release()
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

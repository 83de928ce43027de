package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.3 (r2): "A request sent … whenever the module's plan changes
// carries every file of the module and "whole": true" — also when the
// change moves no file's bytes, only a mode (§3), which then lands.
func TestAPlanChangingOnlyAModeSendsEveryFileWholeAndTheModeLands(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.settle()
	from := m.fills.count()
	p := webPlan()
	p.Files[1].Mode = "0640"
	m.assign("ace", "web", p, webTemplates)
	bustest.Eventually(t, 10*time.Second, func() error {
		if _, md, err := m.file("/etc/web/b.conf"); err != nil || md != 0o640 {
			return fmt.Errorf("b.conf mode %04o (%v), want 0640", md, err)
		}
		return nil
	})
	if err := wholeOfEvery(m.fills.requests("web", from), webPaths...); err != nil {
		t.Fatal(err)
	}
}

// SPEC §4.3: a fill socket that does not answer fails the report "and is
// tried again at the next change or tick". With no tick before it, the
// next change carries every file the failed fill held, not only the
// file that change moved, and the module is applied with both values.
func TestAChangeAfterAFailedFillCarriesWhatTheFailedFillHeld(t *testing.T) {
	m := newMesh(t)
	f := m.faultFill(0)
	m.webModule()
	m.client("ace", f.socket, func(c *Config) { c.Recheck = time.Hour })
	m.waitState("ace", "web", "applied")
	m.settle()
	f.stop()
	m.put(spec.ConfigBucket, "ace.web.model", "sonnet")
	m.waitState("ace", "web", "failed")
	m.settle()
	f.start()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.waitFile("/etc/web/a.conf", "model = sonnet\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

// SPEC §4.2: a secret the vault said changed is asked again; when the
// vault no longer holds it ("absent") it is waited for and the module
// reports waiting, naming it; the file written from the last value stays
// (the client writes nothing away); set again, the new value is filled.
func TestASecretTheVaultNoLongerHoldsIsWaitedForAndFilledOnceSetAgain(t *testing.T) {
	m, v := appMesh(t, ownApp, provApp)
	m.client("ace")
	m.waitFile("/etc/app/api-key", "k-123")
	m.waitState("ace", "app", "applied")
	v.Delete(ownApp)
	m.waitWaiting("ace", "app", `"kind":"secret"`, `"name":"api-key"`, "vault own/app/api-key: absent")
	m.needSays("ace", "app", "secret", "api-key", "waiting", "absent")
	if got, _, err := m.file("/etc/app/api-key"); err != nil || got != "k-123" {
		t.Fatalf("api-key %q (%v) while the vault holds none, want it as last filled", got, err)
	}
	v.Set(t.Context(), ownApp, []byte("k-456"))
	m.waitFile("/etc/app/api-key", "k-456")
	m.waitFile("/etc/app/app.conf", "key = k-456\ntoken = t-456\n")
	m.waitState("ace", "app", "applied")
}

// SPEC §4.7: a module taken off the node has its files removed by the
// node-engine (DELETE), whatever its state: one failing its plan when it
// leaves loses the files it was filled with before, at once and when it
// left while the client was down.
func TestAModuleTakenOffWhileItFailsLosesItsFiles(t *testing.T) {
	broken := `{"node":"ace","module":"web","provisioning":{"files":[{"path":"relative"}]}}`
	gone := func(m *mesh) {
		m.t.Helper()
		m.waitGone(spec.AppliedBucket, "ace.web")
		bustest.Eventually(m.t, 10*time.Second, func() error {
			if _, _, err := m.file("/etc/web/b.conf"); err == nil {
				return fmt.Errorf("/etc/web/b.conf is still there")
			}
			return nil
		})
	}
	t.Run("running", func(t *testing.T) {
		m := newMesh(t)
		m.webModule()
		f := m.stateFill()
		m.client("ace", f.socket)
		m.waitState("ace", "web", "applied")
		m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
		m.put(spec.AssignmentsBucket, "ace.web", broken)
		m.waitState("ace", "web", "failed")
		m.del(spec.AssignmentsBucket, "ace.web")
		gone(m)
	})
	t.Run("down", func(t *testing.T) {
		m := newMesh(t)
		m.webModule()
		f := m.stateFill()
		_, stop := m.startClient("ace", f.socket)
		m.waitState("ace", "web", "applied")
		m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
		m.put(spec.AssignmentsBucket, "ace.web", broken)
		m.waitState("ace", "web", "failed")
		m.settle()
		stop()
		m.del(spec.AssignmentsBucket, "ace.web")
		m.client("ace", f.socket)
		gone(m)
	})
}

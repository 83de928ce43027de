package daemon

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A secret written to its own path carries its on_change (SPEC §3 r2): a
// rotation that changes the file restarts its program once; a rotation to
// the same value restarts nothing and sends nothing.
func TestARotatedSecretRestartsTheProgramThatReadsIt(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	p := appPlan()
	p.Secrets[0].OnChange = nodes.OnChange{Action: "restart", Unit: "app.service"}
	p.Provisions[0].OnChange = nodes.OnChange{Action: "reload", Unit: "forge.service"}
	m.assign("ace", "app", p, appTemplates)
	v := m.devVault()
	v.Set(t.Context(), ownApp, []byte("k-123"))
	v.Set(t.Context(), provApp, []byte("t-456"))
	f := m.faultFill(0)
	m.client("ace", f.socket)
	m.waitFile("/etc/app/api-key", "k-123")
	m.waitState("ace", "app", "applied")
	time.Sleep(200 * time.Millisecond)
	restarts := f.programRestarts()
	if restarts == 0 {
		t.Fatal("the secret's first write restarted nothing")
	}

	v.Set(t.Context(), ownApp, []byte("k-999"))
	m.waitFile("/etc/app/api-key", "k-999")
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if n := f.programRestarts() - restarts; n != 1 {
			return fmt.Errorf("%d program restarts after the rotation, want 1", n)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // room for a second restart to show
	if n := f.programRestarts() - restarts; n != 1 {
		t.Fatalf("%d program restarts after the rotation, want 1", n)
	}
	b, _ := os.ReadFile(f.restarts)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; last != "restart app.service" {
		t.Fatalf("the rotation ran %q, want restart app.service", last)
	}

	restarts, from := f.programRestarts(), m.fills.count()
	asked := v.AskCount(ownApp)
	v.Set(t.Context(), ownApp, []byte("k-999"))
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if v.AskCount(ownApp) == asked {
			return fmt.Errorf("%s not asked again after secret-changed", ownApp)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if n := f.programRestarts() - restarts; n != 0 {
		t.Errorf("a rotation to the same value ran %d programs", n)
	}
	if got := m.fills.since(from); len(got) != 0 {
		t.Errorf("a rotation to the same value sent %v", got)
	}
}

// A provisions entry's credential written to its path carries on_change
// as a secret's (SPEC §3 r2): its rotation reloads the program named, and
// only that one.
func TestARotatedCredentialReloadsTheProgramThatReadsIt(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	p := appPlan()
	p.Secrets[0].OnChange = nodes.OnChange{Action: "restart", Unit: "app.service"}
	p.Provisions[0].OnChange = nodes.OnChange{Action: "reload", Unit: "forge.service"}
	p.Files = p.Files[2:] // plain.conf alone: the credential is read by its file only
	m.assign("ace", "app", p, appTemplates)
	v := m.devVault()
	v.Set(t.Context(), ownApp, []byte("k-123"))
	v.Set(t.Context(), provApp, []byte("t-456"))
	f := m.faultFill(0)
	m.client("ace", f.socket)
	m.waitFile("/etc/app/forge-token", "t-456")
	m.waitState("ace", "app", "applied")
	m.settle()
	before := f.programRestarts()

	v.Set(t.Context(), provApp, []byte("t-789"))
	m.waitFile("/etc/app/forge-token", "t-789")
	bustest.Eventually(t, 5*time.Second, func() error {
		if n := f.programRestarts() - before; n != 1 {
			return fmt.Errorf("%d programs run after the rotation, want 1", n)
		}
		return nil
	})
	b, _ := os.ReadFile(f.restarts)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; last != "reload forge.service" {
		t.Fatalf("the rotation ran %q, want reload forge.service", last)
	}
}

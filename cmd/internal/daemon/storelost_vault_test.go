package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The store lost under a module reading secrets: the client asks the vault
// again once the bus is back (SPEC §4.2 r2), while the assignments the
// vault checks its rights against are not there yet. Once they are
// written back the module is applied again, its files as they were,
// without waiting out a refusal's ten minutes.
func TestAStoreLostUnderAModuleWithSecretsAppliesItOnceTheAssignmentsAreBack(t *testing.T) {
	m := newMesh(t)
	v, _ := m.appOnAReconnectingVault(100 * time.Millisecond)
	m.waitFile("/etc/app/app.conf", "key = k-123\ntoken = t-456\n")
	asked := v.AskCount(ownApp)

	m.busDown()
	m.busUpEmpty()
	bustest.Eventually(t, 10*time.Second, func() error {
		if v.AskCount(ownApp) == asked {
			return fmt.Errorf("%s not asked again since the bus came back", ownApp)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)

	provisionBus(t, m.js, 1)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/app.conf", "key = k-123\ntoken = t-456\n")
	m.waitFile("/etc/app/api-key", "k-123")
}

// A secret rotated while the bus is up without JetStream (the vault's
// secret-changed reaches the client, but the vault cannot read the
// assignments it checks its rights against): the client keeps the value
// it holds, the module stays applied, and the new value is filled once
// JetStream is back, with no further event.
func TestASecretRotatedWhileJetStreamIsAwayIsFilledOnceItIsBack(t *testing.T) {
	m := newMesh(t)
	v, vc := m.appOnAReconnectingVault(100 * time.Millisecond)

	m.busDown()
	m.busUpWithoutJetStream()
	bustest.Eventually(t, 10*time.Second, func() error {
		if !vc.IsConnected() || !contains(m.logs.String(), "the bus is back: reading every input again") {
			return fmt.Errorf("the vault (%v) or the client is not back on the bus yet", vc.Status())
		}
		return nil
	})
	asked := v.AskCount(ownApp)
	v.Set(t.Context(), ownApp, []byte("k-999"))
	bustest.Eventually(t, 10*time.Second, func() error {
		if v.AskCount(ownApp) < asked+2 {
			return fmt.Errorf("%s asked %d times since the rotation", ownApp, v.AskCount(ownApp)-asked)
		}
		return nil
	})
	if got, _, _ := m.file("/etc/app/api-key"); got != "k-123" {
		t.Fatalf("api-key %q while JetStream was away", got)
	}
	m.busDown()
	m.busUp()
	m.waitFileFor("/etc/app/api-key", "k-999", 15*time.Second)
	m.waitState("ace", "app", "applied")
}

// A rotation missed while the bus was away, and the vault not answering
// the reconnect's asks (it is reconnecting too): the value held is kept
// meanwhile, and the name is asked again with backoff until the vault
// answers, so the new value reaches its file without a further event.
func TestARotationMissedWhileAwayReachesItsFileThoughTheVaultWasSilentAtTheReconnect(t *testing.T) {
	m := newMesh(t)
	v, vc := m.appOnAReconnectingVault(100 * time.Millisecond)

	m.busDown()
	bustest.Eventually(t, 5*time.Second, func() error {
		if !vc.IsReconnecting() {
			return fmt.Errorf("the vault's connection is %v", vc.Status())
		}
		return nil
	})
	v.Set(t.Context(), ownApp, []byte("k-999")) // its secret-changed is lost
	v.SetSilent(true)
	asked := v.AskCount(ownApp)
	m.busUp()
	bustest.Eventually(t, 10*time.Second, func() error {
		if v.AskCount(ownApp) == asked {
			return fmt.Errorf("%s not asked since the bus came back", ownApp)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	if got, _, _ := m.file("/etc/app/api-key"); got != "k-123" {
		t.Fatalf("api-key %q while the vault was silent", got)
	}
	if r, _ := m.report("ace", "app"); r["state"] != "applied" {
		t.Fatalf("report %v while the vault was silent, want applied kept", r["state"])
	}
	v.SetSilent(false)
	m.waitFile("/etc/app/api-key", "k-999")
	m.waitState("ace", "app", "applied")
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A consumer's credential rotated while the bus is away reaches the
// provider's consumers list once it is back (SPEC §4.2 r2: every vault
// name held is asked again, a consumer's pair/ name as much as a secret).
func TestAConsumersCredentialRotatedWhileTheBusIsAwayReachesTheList(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v, vc := m.reconnectingVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-1"))
	m.client("ace", func(c *Config) { c.ReaskSpread = 300 * time.Millisecond })
	if l := m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", "")); l[0].Value != "cc-1" {
		t.Fatalf("value %q", l[0].Value)
	}
	m.waitState("ace", "gitea", "applied")

	m.busDown()
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !vc.IsReconnecting() {
			return fmt.Errorf("the vault's connection is %v", vc.Status())
		}
		return nil
	})
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-2")) // its secret-changed is lost
	m.busUp()
	bustest.Eventually(m.t, 15*time.Second, func() error {
		l, err := m.consumersIn("/etc/gitea/consumers.json")
		if err != nil {
			return err
		}
		if len(l) != 1 || l[0].Value != "cc-2" {
			return fmt.Errorf("consumers %+v, want the rotated credential", l)
		}
		return nil
	})
	m.waitState("ace", "gitea", "applied")
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A consumer's credential the vault says changed (mesh-vault.secret-changed
// naming its pair/ name) is asked once more and reaches the consumers list;
// only the file naming ${consumers:X} is sent, and the other consumers'
// credentials are not asked again (SPEC §4.2, §4.5).
func TestARotatedConsumerCredentialRefillsOnlyTheConsumersFile(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	m.assign("g14", "aider", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-1"))
	v.Set(t.Context(), pair("g14", "aider", ""), []byte("ai-1"))
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "aider", ""), pair("g14", "claude-code", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	before, from := askTotals(v), m.fills.count()

	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-2"))
	bustest.Eventually(t, 10*time.Second, func() error {
		l, err := m.consumersIn("/etc/gitea/consumers.json")
		if err != nil {
			return err
		}
		if len(l) != 2 || l[0].Value != "ai-1" || l[1].Value != "cc-2" {
			return fmt.Errorf("consumers %+v", l)
		}
		return nil
	})
	m.settle()
	after := askTotals(v)
	if d := after[pair("g14", "claude-code", "")] - before[pair("g14", "claude-code", "")]; d != 1 {
		t.Errorf("the rotated credential asked %d more times, want once", d)
	}
	if d := after[pair("g14", "aider", "")] - before[pair("g14", "aider", "")]; d != 0 {
		t.Errorf("the other consumer's credential asked %d more times, want none", d)
	}
	if got := m.fills.since(from); len(got) != 1 || got[0] != "/etc/gitea/consumers.json" {
		t.Fatalf("sent %v, want only the consumers file", got)
	}
}

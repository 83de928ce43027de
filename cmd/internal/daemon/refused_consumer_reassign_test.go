package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A consumer left out of its provider's list because the vault refused its
// credential is asked for again as soon as the consumer's assignment is
// written again (on its own node, read by the provider's client), not
// after the refused retry (10 minutes): the vault judges a consumer's
// credential by the consumer's plan, and an operator who fixed what it
// refused for re-puts that assignment. Until then the refusal stands.
func TestAConsumersRefusedCredentialIsAskedAgainWhenTheConsumersAssignmentIsWrittenAgain(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	v := m.devVault()
	name := pair("g14", "cc", "")
	v.Set(t.Context(), name, []byte("cc-secret"))
	v.Refuse(name, "cc is not let in yet")
	m.client("ace")
	m.waitState("ace", "gitea", "applied")
	m.waitConsumers("/etc/gitea/consumers.json")
	m.settle()
	asked := v.AskCount(name)
	v.Refuse(name, "") // the vault would answer now

	time.Sleep(300 * time.Millisecond)
	if n := v.AskCount(name); n != asked {
		t.Fatalf("asked %d times more before the consumer's assignment was written again, want the refusal to stand", n-asked)
	}
	m.assign("g14", "cc", consumerPlan(), nil) // the same plan, written again
	m.waitConsumers("/etc/gitea/consumers.json", name)
	bustest.Eventually(t, 5*time.Second, func() error {
		if !contains(m.logs.String(), "the vault asked again for the consumer credentials it refused") {
			return fmt.Errorf("no log line says the refused credential was asked again")
		}
		return nil
	})
}

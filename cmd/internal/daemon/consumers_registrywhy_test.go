package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider whose ${consumers:X} also waits for the registry to name kind
// consumers (a client started before the server wrote it) says, once the
// vault has answered for every consumer's credential, that it waits for
// the registry alone: its report no longer says it waits for the vault's
// first answer, which came (SPEC §5.3: the why of what it waits for).
func TestAConsumersListTheVaultAnsweredNoLongerSaysItWaitsForTheVault(t *testing.T) {
	m := newMesh(t)
	m.del(spec.RegistryBucket, "consumers")
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte("cc-secret"))
	m.client("ace")
	bustest.Eventually(t, 10*time.Second, func() error {
		if v.AskCount(pair("g14", "cc", "")) == 0 {
			return fmt.Errorf("the consumer's credential not asked yet")
		}
		return nil
	})
	const registry = "the registry (mesh-provisioner_registry) does not name kind consumers"
	bustest.Eventually(t, 10*time.Second, func() error {
		r, ok := m.report("ace", "gitea")
		if !ok || r["state"] != "waiting" {
			return fmt.Errorf("report %v", r)
		}
		w, _ := r["waiting"].([]any)
		if len(w) != 1 {
			return fmt.Errorf("waiting for %s, want one entry", waitingText(r))
		}
		if why := fmt.Sprint(w[0].(map[string]any)["why"]); why != registry {
			return fmt.Errorf("waiting for %q, want %q alone", why, registry)
		}
		return nil
	})
}

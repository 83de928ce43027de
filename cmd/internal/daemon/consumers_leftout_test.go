package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A consumer whose credential the vault does not hold, or refuses, is
// left out of its provider's consumers list (SPEC §4.5), which the log
// said once and nothing else did: explain showed the list's file met,
// and an operator asking why a consumer cannot reach its provider had no
// command that told (an outside audit). Explain of the provider says each
// consumer left out under the file, with its vault name and why; a
// credential's value is never in it.
func TestExplainSaysTheConsumersAListLeavesOut(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan("zeta", "alpha", "beta"), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", "zeta"), []byte("PLANTED-zeta-value"))
	v.Set(t.Context(), pair("g14", "claude-code", "alpha"), []byte("PLANTED-alpha-value"))
	v.Refuse(pair("g14", "claude-code", "alpha"), "alpha is revoked")
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", "zeta"))
	m.waitState("ace", "gitea", "applied")
	bustest.Eventually(t, 10*time.Second, func() error {
		e, text := explainOf(t, sock, "gitea")
		for _, want := range []string{
			"left out of the consumers list: vault " + pair("g14", "claude-code", "alpha") + ": refused: alpha is revoked",
			"alpha is revoked",
			"left out of the consumers list: vault " + pair("g14", "claude-code", "beta") + ": absent",
		} {
			if !strings.Contains(text, want) {
				return fmt.Errorf("explain does not say %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, pair("g14", "claude-code", "zeta")+":") {
			return fmt.Errorf("explain says the consumer listed is left out:\n%s", text)
		}
		if strings.Contains(text, "PLANTED") || strings.Contains(fmt.Sprintf("%+v", e), "PLANTED") {
			t.Fatalf("a credential's value is in explain:\n%s", text)
		}
		return nil
	})
}

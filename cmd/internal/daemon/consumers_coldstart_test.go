package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// manyConsumers binds n consumers (module cc on nodes c000…) to gitea for
// gitea-read, and returns their credentials' vault names in list order.
func (m *mesh) manyConsumers(n int) []string {
	m.t.Helper()
	names := make([]string, n)
	for i := range n {
		node := fmt.Sprintf("c%03d", i)
		m.assign(node, "cc", consumerPlan(), nil)
		names[i] = pair(node, "cc", "")
	}
	return names
}

// A provider with many consumers is filled once at start, its program
// restarted once, whatever order the vault's answers for its consumers'
// credentials come in (SPEC §4.5, §1: one value moving re-renders once;
// an operator expects one restart at start). Before, the consumers list
// was filled again for every batch of answers as they arrived: at 200
// consumers the provider's program was restarted a dozen times or more in
// its first seconds (92 times at 2,019). A consumer whose credential the
// vault does not hold is left out of that one fill, and said in the log.
func TestAProviderWithManyConsumersIsFilledOnceAtStart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.restartingProvider("ace")
	names := m.manyConsumers(200)
	v := m.devVault()
	var held []string
	for i, name := range names {
		if i%10 == 7 {
			continue // not in the vault: left out
		}
		v.Set(t.Context(), name, []byte(fmt.Sprintf("cred-%03d", i)))
		held = append(held, name)
	}
	m.client("ace", f.socket, func(c *Config) { c.VaultTimeout = 5 * time.Second })
	m.waitConsumers("/etc/gitea/consumers.json", held...)
	m.waitState("ace", "gitea", "applied")
	m.settle()
	fills := 0
	for _, r := range m.fills.requests("gitea", 0) {
		for _, x := range r.Files {
			if x.Path == "/etc/gitea/consumers.json" {
				fills++
			}
		}
	}
	restarts := strings.Count(f.programRestarts(), "gitea.service")
	if fills != 1 || restarts != 1 {
		t.Errorf("the consumers file was sent %d times and gitea restarted %d times at start, want once each", fills, restarts)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(m.logs.String(), pair("c007", "cc", "")) {
			return fmt.Errorf("no log line names the consumer left out, %s", pair("c007", "cc", ""))
		}
		return nil
	})
}

package daemon

import (
	"strings"
	"testing"
)

// One change of the assignments that unbinds a consumer and binds another
// (here a consumer's local changed: its credential's name moves) fills the
// provider's consumers file once, from the old list straight to the new,
// and restarts its program once. Before, the list without either was
// filled at once and the new one when the vault answered ms later: two
// restarts, and the consumer out of the file in between (an outside audit).
func TestAConsumersLocalChangedFillsTheProviderOnce(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte("p-old"))
	v.Set(t.Context(), pair("g14", "cc", "l1"), []byte("p-new"))
	v.Set(t.Context(), pair("g14", "dd", ""), []byte("p-dd"))
	m.restartingProvider("ace")
	m.assign("g14", "cc", consumerPlan(), nil)
	m.assign("g14", "dd", consumerPlan(), nil)
	m.client("ace", f.socket)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", ""), pair("g14", "dd", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	restarts := f.programRestarts()

	m.assign("g14", "cc", consumerPlan("l1"), nil)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", "l1"), pair("g14", "dd", ""))
	m.settle()
	if n := strings.Count(strings.TrimPrefix(f.programRestarts(), restarts), "gitea.service"); n != 1 {
		t.Errorf("the provider's program restarted %d times for one consumer's local changed, want once: %q", n, strings.TrimPrefix(f.programRestarts(), restarts))
	}
}

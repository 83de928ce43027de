package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
)

// A storm of secret-changed events naming a secret the client holds asks
// the vault one ask at a time, and logs as many lines as it makes asks,
// not one per event (SPEC §5.1: one log event per state change).
func TestAStormOfSecretChangedLogsPerAskNotPerEvent(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "app", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "k", Path: "/etc/app/k"}}}, nil)
	v := m.devVault()
	v.Set(t.Context(), "own/app/k", []byte("val"))
	m.client("ace")
	m.waitState("ace", "app", "applied")
	m.settle()
	asks0 := v.AskCount("own/app/k")
	const n = 20000
	for i := 0; i < n; i++ {
		m.nc.Publish("mesh-vault.secret-changed", []byte(`{"secret":"own/app/k"}`))
	}
	m.nc.Flush()
	time.Sleep(time.Second)
	m.settle()
	asks := v.AskCount("own/app/k") - asks0
	lines := strings.Count(m.logs.String(), "the vault says a secret changed")
	if asks == 0 || asks > n/10 {
		t.Fatalf("%d asks for %d events", asks, n)
	}
	if lines > asks+1 {
		t.Fatalf("%d log lines for %d events and %d asks", lines, n, asks)
	}
}

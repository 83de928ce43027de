package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The client's outcome counters are shown at 0 for every outcome from the
// start, as provisioner_modules is: a counter that first appears at 1 (a
// first failed fill, a first refused secret) loses that event to
// increase() and rate(), so an alert on failed fills missed the first
// after every restart.
func TestTheOutcomeCountersAreShownAtZeroFromTheStart(t *testing.T) {
	fams, err := control.NewClientMetrics(vault.OutcomeNames()).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "outcome" && m.GetCounter().GetValue() == 0 {
					seen[f.GetName()+"/"+l.GetValue()] = true
				}
			}
		}
	}
	for _, want := range []string{"provisioner_fills_total/ok", "provisioner_fills_total/failed",
		"provisioner_vault_asks_total/sealed", "provisioner_vault_asks_total/absent", "provisioner_vault_asks_total/refused",
		"provisioner_vault_asks_total/silent", "provisioner_vault_asks_total/error"} {
		if !seen[want] {
			t.Errorf("%s is not shown at 0 before any event (seen %v)", want, seen)
		}
	}
}

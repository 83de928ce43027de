package server

import (
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The verb's counters are shown at 0 for every what from the start, as
// the registry's are: a counter that first appears at 1 loses that first
// request to increase() and rate() (they need two samples), so an alert
// on request errors missed the first error after every restart.
func TestTheVerbsCountersAreShownAtZeroFromTheStart(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	reg, _ := newMetrics(newSweepCache(js), quietLog())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	for _, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "what" && m.GetCounter().GetValue() == 0 {
					if seen[f.GetName()] == nil {
						seen[f.GetName()] = map[string]bool{}
					}
					seen[f.GetName()][l.GetValue()] = true
				}
			}
		}
	}
	for _, name := range []string{"mesh_provisioner_requests_total", "mesh_provisioner_request_errors_total"} {
		for _, what := range []string{"registry", "needs", "applied", "collect", "sweep", "unknown"} {
			if !seen[name][what] {
				t.Errorf("%s{what=%q} is not shown at 0 before any request (seen %v)", name, what, seen[name])
			}
		}
	}
}

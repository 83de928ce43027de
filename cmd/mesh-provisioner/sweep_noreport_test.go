package main

import (
	"strings"
	"testing"
)

// TestASweepCountsModulesWithoutAReport: a node whose client is down (or never started) has its modules
// assigned with plans but no report and no need: the sweep must not say
// that no module is assigned to it, and must count them.
func TestASweepCountsModulesWithoutAReport(t *testing.T) {
	url := sweepMesh(t, true, func(b sweepBuckets) {
		b.put(b.assignments, "dead.web", map[string]any{"node": "dead", "module": "web", "provisioning": map[string]any{}})
		b.put(b.assignments, "dead.db", map[string]any{"node": "dead", "module": "db", "provisioning": map[string]any{}})
		b.put(b.assignments, "ace.web", map[string]any{"node": "ace", "module": "web", "provisioning": map[string]any{}})
		b.put(b.applied, "ace.web", map[string]any{"node": "ace", "module": "web", "state": "applied"})
	})
	code, out, errs := runSweep("--nats", url, "--node", "dead")
	t.Logf("--node dead: exit %d\n%s%s", code, out, errs)
	if strings.Contains(errs, "no module is assigned to node dead") {
		t.Errorf("the sweep says no module is assigned to node dead; dead.web and dead.db are")
	}
	if !strings.Contains(out, "2 assigned without a report") {
		t.Errorf("--node dead does not count its 2 modules without a report:\n%s", out)
	}
	code, out, errs = runSweep("--nats", url)
	t.Logf("whole mesh: exit %d\n%s%s", code, out, errs)
	if !strings.Contains(out, "2 assigned without a report") {
		t.Errorf("the whole mesh's sweep does not count the 2 modules without a report:\n%s", out)
	}
}

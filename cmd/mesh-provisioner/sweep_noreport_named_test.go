package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
)

// TestASweepNamesModulesWithoutAReport: an operator told "N assigned
// without a report" must learn which: the text names each node/module
// (the first few, then how many more) and the JSON lists them all, in
// node/module order, within the sweep's narrowing.
func TestASweepNamesModulesWithoutAReport(t *testing.T) {
	url := sweepMesh(t, true, func(b sweepBuckets) {
		plan := map[string]any{"provisioning": map[string]any{}}
		b.put(b.assignments, "dead.web", plan)
		b.put(b.assignments, "dead.db", plan)
		b.put(b.assignments, "ace.web", plan)
		b.put(b.applied, "ace.web", map[string]any{"node": "ace", "module": "web", "state": "applied"})
		b.put(b.assignments, "ace.cron", plan) // ace's client has not reported this one yet
		b.put(b.assignments, "ace.noplan", map[string]any{"node": "ace", "module": "noplan"})
		for i := range 15 {
			b.put(b.assignments, fmt.Sprintf("big.m%02d", i), plan)
		}
	})

	_, out, errs := runSweep("--nats", url, "--node", "dead")
	t.Logf("--node dead:\n%s%s", out, errs)
	for _, want := range []string{`(?m)^no report +dead/db$`, `(?m)^no report +dead/web$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("--node dead does not name %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ace/cron") {
		t.Errorf("--node dead names ace/cron, which is not on dead:\n%s", out)
	}

	_, out, errs = runSweep("--nats", url)
	t.Logf("whole mesh:\n%s%s", out, errs)
	if !strings.Contains(out, "18 assigned without a report") {
		t.Errorf("the count is not 18:\n%s", out)
	}
	if got := len(regexp.MustCompile(`(?m)^no report +\S+/\S+$`).FindAllString(out, -1)); got != 10 {
		t.Errorf("%d modules named, want the first 10:\n%s", got, out)
	}
	if !regexp.MustCompile(`(?m)^no report +ace/cron$`).MatchString(out) || strings.Contains(out, "ace/noplan") {
		t.Errorf("ace/cron not named first, or ace/noplan (no plan) named:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^no report +and 8 more \(sweep --json lists them\)$`).MatchString(out) {
		t.Errorf("the 8 left out are not counted:\n%s", out)
	}

	code, out, errs := runSweep("--nats", url, "--json")
	var r struct {
		Summary  server.Summary      `json:"summary"`
		NoReport []server.NodeModule `json:"no_report"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("--json: exit %d, %v:\n%s%s", code, err, out, errs)
	}
	if len(r.NoReport) != 18 || r.Summary.NoReport != 18 {
		t.Fatalf("--json lists %d modules without a report (summary %d), want 18:\n%s", len(r.NoReport), r.Summary.NoReport, out)
	}
	if r.NoReport[0] != (server.NodeModule{Node: "ace", Module: "cron"}) || r.NoReport[17] != (server.NodeModule{Node: "dead", Module: "web"}) {
		t.Errorf("--json's no_report not in node/module order: %+v", r.NoReport)
	}
}

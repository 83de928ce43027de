package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestASweepExitsOneForAModuleWithoutAReportPastStoodAfter: a module
// assigned with a plan whose node's client has written no report of it
// for longer than --stood-after (the client down since before the plan
// came, or never started) is held back as much as a need that stood
// asked: the sweep says how many stood so and exits 1, so a cron job
// notices; one assigned more recently only counts, exit 0.
func TestASweepExitsOneForAModuleWithoutAReportPastStoodAfter(t *testing.T) {
	url := sweepMesh(t, true, func(b sweepBuckets) {
		plan := map[string]any{"provisioning": map[string]any{}}
		b.put(b.assignments, "dead.web", plan)
		b.put(b.assignments, "ace.web", plan)
		b.put(b.applied, "ace.web", map[string]any{"node": "ace", "module": "web", "state": "applied"})
	})
	time.Sleep(2 * time.Second) // dead.web assigned over 1s ago

	code, out, errs := runSweep("--nats", url)
	t.Logf("default stood-after: exit %d\n%s%s", code, out, errs)
	if code != 0 || strings.Contains(out, "of them for over") {
		t.Errorf("a module without a report for 2s: exit %d, want 0 (stood_after is 10m)\n%s", code, out)
	}

	code, out, errs = runSweep("--nats", url, "--stood-after", "1s")
	t.Logf("--stood-after 1s: exit %d\n%s%s", code, out, errs)
	if code != 1 {
		t.Errorf("a module without a report for over --stood-after 1s: exit %d, want 1", code)
	}
	if want := "1 assigned without a report (their node's client has not reported), 1 of them for over 1s"; !strings.Contains(out, want) {
		t.Errorf("the summary does not say %q:\n%s", want, out)
	}

	_, out, _ = runSweep("--nats", url, "--stood-after", "1s", "--json")
	var r struct {
		Summary map[string]any `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Summary["no_report_stood"] != float64(1) {
		t.Errorf("summary.no_report_stood = %v, want 1: %v", r.Summary["no_report_stood"], r.Summary)
	}
}

package main

import (
	"encoding/json"
	"testing"
)

// TestEverySweepFindingCarriesANeedsList: SPEC §6.2's findings each carry
// "needs", a list; a finding of a key out of shape (no need to name) says
// an empty one, so a script's `jq '.findings[].needs[]'` over `sweep
// --json` does not stop at it with "Cannot iterate over null".
func TestEverySweepFindingCarriesANeedsList(t *testing.T) {
	url := sweepMesh(t, true, func(b sweepBuckets) {
		b.put(b.assignments, "ace.web", map[string]any{"provisioning": map[string]any{}})
		b.put(b.needs, "ace.web.config.a=zz", "{}") // the key out of shape
		b.put(b.needs, "ace.web.config.k", map[string]any{"node": "ace", "module": "web", "kind": "config", "name": "k",
			"state": "failed", "why": "refused"})
		b.put(b.applied, "ace.web", "not json") // the value out of shape
	})
	code, out, errs := runSweep("--nats", url, "--json")
	if code == 2 {
		t.Fatalf("exit 2: %s", errs)
	}
	var r struct {
		Findings []map[string]json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Findings) != 3 {
		t.Fatalf("%d findings, want 3 (one failed, two out of shape):\n%s", len(r.Findings), out)
	}
	for _, f := range r.Findings {
		var needs []map[string]string
		if raw, ok := f["needs"]; !ok || json.Unmarshal(raw, &needs) != nil || needs == nil {
			t.Errorf("finding %s %s has needs %s, want a list", f["verdict"], f["key"], f["needs"])
		}
	}
}

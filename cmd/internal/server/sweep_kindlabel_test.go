package server

import (
	"fmt"
	"testing"
	"time"
)

// A template may name any number of kinds no domain answers (each a need
// the client writes, failed): mesh_provisioner_needs labels them all
// kind="unknown", one series, so a plan cannot grow the metric's series
// without bound; the sweep's findings still name each kind.
func TestKindsTheRegistryLacksAreOneMetricLabel(t *testing.T) {
	js, needs := aceWebRegistered(t)
	const kinds = 50
	for i := range kinds {
		putNeed(t, needs, "ace", "web", fmt.Sprintf("made-up-%d", i), "x", "failed", "a kind this client does not fill")
	}
	putNeed(t, needs, "ace", "web", "config", "model", "met", "")
	res, err := sweep(testCtx(t), js, SweepParams{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for l, n := range res.needs {
		switch l.kind {
		case kindUnknown:
			if n != kinds || l.verdict != "failed" || l.owner != ownerNoRegistry {
				t.Errorf("the unknown kinds' series: %+v = %d, want failed, %q, %d", l, n, ownerNoRegistry, kinds)
			}
		case "config":
		default:
			t.Errorf("a series labelled kind %q: every kind the registry lacks should be %q", l.kind, kindUnknown)
		}
	}
	named := map[string]bool{}
	for _, f := range res.reply.Findings {
		named[f.Kind] = true
	}
	if len(named) != kinds {
		t.Errorf("the findings name %d kinds, want each of the %d", len(named), kinds)
	}
}

// So are a module's ${bound:X:…} placeholders whose provision X no
// provisions entry names (and whose why names no provider): each is a
// finding owned by "unknown (no provisions entry for X)", but one series
// of mesh_provisioner_needs, owner "unknown (no provisions entry)".
func TestBoundNeedsWithoutAProviderAreOneMetricOwner(t *testing.T) {
	js, needs := aceWebRegistered(t)
	const provisions = 50
	for i := range provisions {
		putNeed(t, needs, "ace", "web", "bound", fmt.Sprintf("p-%d:url", i), "failed", "no provisions entry names this provision")
	}
	res, err := sweep(testCtx(t), js, SweepParams{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.needs) != 1 {
		t.Errorf("%d series of mesh_provisioner_needs, want 1: %v", len(res.needs), res.needs)
	}
	for l, n := range res.needs {
		if want := (needLabels{"failed", "bound", ownerNoProvider}); l != want || n != provisions {
			t.Errorf("series %+v = %d, want %+v = %d", l, n, want, provisions)
		}
	}
	owners := map[string]bool{}
	for _, f := range res.reply.Findings {
		owners[f.Owner] = true
	}
	if len(owners) != provisions || !owners["unknown (no provisions entry for p-7)"] {
		t.Errorf("the findings' owners %v: want each provision's", owners)
	}
}

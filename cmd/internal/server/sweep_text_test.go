package server

import (
	"strings"
	"testing"
)

// WriteSweep prints a block per finding, worst first: a failed finding,
// the modules whose report failed, then the findings stood asked and
// waiting; a block names every node/module its finding holds, and says
// how many the reply left out.
func TestWriteSweepPrintsABlockPerFindingWorstFirst(t *testing.T) {
	r := SweepReply{At: "2026-01-02T10:00:00Z", StoodAfter: "10m0s",
		Findings: []Finding{
			{Verdict: VerdictFailed, Owner: "gitea", Kind: "bound", Name: "gitea-read:url", Why: "gitea does not offer gitea-read",
				Since: "2026-01-02T07:50:00Z", Count: 5, NeedsLeftOut: 2,
				Needs: []NodeModule{{"ace", "claude-code"}, {"g14", "claude-code"}, {"novox", "claude-code"}}},
			{Verdict: VerdictStoodAsked, Owner: "route-proxy", Kind: "bound", Name: "route:url", Why: "not written yet",
				Since: "2026-01-02T09:45:00Z", Count: 1, Needs: []NodeModule{{"novox", "gitea"}}},
			{Verdict: VerdictWaiting, Owner: "mesh-config", Kind: "config", Name: "smtp-host", Why: "not written \x1b[2J yet",
				Since: "2026-01-02T09:59:30Z", Count: 1, Needs: []NodeModule{{"g14", "graf\x1bana"}}},
			{Verdict: VerdictOutOfShape, Owner: "mesh-provisioner", Bucket: "mesh-provisioner_needs", Key: "ace", Why: "not node.module.kind.name", Count: 1},
		},
		FailedModules: []FailedModule{{Node: "ace", Module: "web", Reason: "fill socket refused", At: "2026-01-02T09:57:00Z"}},
		Orphans:       []Orphan{{Bucket: "mesh-provisioner_applied", Key: "old.gone", Why: "module assigned nowhere"}},
	}
	r.Summary.Modules, r.Summary.Applied, r.Summary.Failed = 3, 2, 1
	r.Summary.OutOfShape, r.Summary.Orphans = 1, 1
	var b strings.Builder
	WriteSweep(&b, r)
	t.Logf("WriteSweep:\n%s", b.String())
	want := `failed        gitea  bound gitea-read:url  "gitea does not offer gitea-read"  since 2h10m
              ace/claude-code
              g14/claude-code
              novox/claude-code
              and 2 more (left out of the reply; the verb's what=needs lists them)
failed        module ace/web  "fill socket refused"  since 3m00s
stood asked   route-proxy  bound route:url  "not written yet"  since 15m00s
              novox/gitea
waiting       mesh-config  config smtp-host  "not written \x1b[2J yet"  since 30s
              g14/graf\x1bana
out of shape  mesh-provisioner  mesh-provisioner_needs ace  "not node.module.kind.name"
orphan        mesh-provisioner_applied old.gone  "module assigned nowhere"

modules 3: 2 applied, 0 waiting, 1 failed
`
	if got := b.String(); !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant it to begin\n%s", got, want)
	}
	if !strings.Contains(b.String(), "\nkeys: 1 out of shape, 1 orphan\n") {
		t.Errorf("the summary has no line %q:\n%s", "keys: 1 out of shape, 1 orphan", b.String())
	}
}

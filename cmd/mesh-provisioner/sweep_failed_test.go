package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// failedMesh starts a bus and the server's verb over a mesh whose needs
// are all met, where a's plan broke and b's fill failed (their reports say
// failed), c applied, and a report of a module assigned nowhere (z) says
// failed too. It returns the URL.
func failedMesh(t *testing.T) string {
	return sweepMesh(t, false, func(b sweepBuckets) {
		at := time.Now().Add(-3 * time.Minute).UTC().Format(time.RFC3339)
		for node, rep := range map[string]map[string]string{
			"a": {"state": "failed", "reason": "plan: template web.conf: unknown kind \"nope\"\x1b[2J"},
			"b": {"state": "failed", "reason": "fill socket refused"},
			"c": {"state": "applied"},
		} {
			b.put(b.assignments, node+".web", map[string]any{"provisioning": map[string]any{}})
			b.put(b.needs, spec.EncodeKey(node, "web", "config", "port"),
				map[string]string{"node": node, "module": "web", "kind": "config", "name": "port", "state": "met"})
			rep["node"], rep["module"], rep["at"] = node, "web", at
			b.put(b.applied, node+".web", rep)
		}
		b.put(b.applied, "z.gone", map[string]string{"node": "z", "module": "gone", "state": "failed", "reason": "old"})
	})
}

// Modules whose reports say failed hold the mesh back though every need
// is met: the sweep exits 1 and its output names them with their reasons
// and says how many failed; the JSON's findings stay needs only, and its
// failed_modules names them (a CI step reads it). A mesh all applied
// exits 0.
func TestSweepExitsOneWhenAModuleFailedWithItsNeedsMet(t *testing.T) {
	url := failedMesh(t)
	code, out, errs := runSweep("--nats", url)
	t.Logf("mesh-provisioner sweep:\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (two modules failed); stderr %s", code, errs)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^failed\s+module a/web  "plan: template web.conf: unknown kind \\"nope\\"\\x1b\[2J"  since 3m0\ds$`),
		regexp.MustCompile(`(?m)^failed\s+module b/web  "fill socket refused"  since 3m0\ds$`),
		regexp.MustCompile(`(?m)^modules 3: 1 applied, 0 waiting, 2 failed\n2 modules failed \(named above; mesh-provisioner-client status on their nodes says more\)\nneeds 3: 3 met, `),
	} {
		if !want.MatchString(out) {
			t.Errorf("stdout lacks %s", want)
		}
	}
	if strings.Contains(out, "z/gone") || strings.ContainsRune(out, '\x1b') || errs != "" {
		t.Errorf("an orphan named, or a raw escape, or stderr %q:\n%q", errs, out)
	}

	code, out, _ = runSweep("--nats", url, "--json")
	var r server.SweepReply
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, out)
	}
	if len(r.Findings) != 0 || r.Summary.Failed != 2 || len(r.FailedModules) != 2 ||
		r.FailedModules[0] != (server.FailedModule{Key: "a.web", Node: "a", Module: "web", Reason: "plan: template web.conf: unknown kind \"nope\"\x1b[2J", At: r.FailedModules[0].At}) ||
		r.FailedModules[1].Key != "b.web" || r.FailedModules[1].Reason != "fill socket refused" {
		t.Errorf("--json: findings stay needs only, and failed_modules names a/web and b/web with their reasons (not the orphan z/gone):\n%s", out)
	}

	code, out, errs = runSweep("--nats", url, "--node", "c")
	if code != 0 || !strings.Contains(out, "modules 1: 1 applied, 0 waiting, 0 failed\nneeds 1: 1 met") {
		t.Errorf("node c, all applied: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runSweep("--nats", url, "--node", "b")
	if code != 1 || !strings.Contains(out, "1 module failed (named above; mesh-provisioner-client status on its node says more)") ||
		strings.Contains(out, "a/web") {
		t.Errorf("node b: exit %d\n%s", code, out)
	}
}

package daemon

import (
	"maps"
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// needValues reads every need of node.module: key → value.
func (m *mesh) needValues(node, module string) map[string]string {
	out := map[string]string{}
	for _, k := range m.needKeys(spec.EncodeKey(node, module) + ".") {
		if v, ok := m.get(spec.NeedsBucket, k); ok {
			out[k] = v
		}
	}
	return out
}

// A module whose new plan fails before its placeholders' states are
// known (a template names a secret the plan does not declare; a plan
// breaking a rule) keeps its needs as written: SPEC §5.2 deletes a need
// when no template of the module names it any more, which a failed check
// does not say, and a provider reading the needs bucket saw every need of
// the consumer go (as if it had left) at one typo in its plan. The report
// says failed with the reason, and the placeholder at fault is a need,
// failed (TestEachPlaceholderThatFailsItsPlanIsAFailedNeed); a plan
// refused before its templates are read keeps that one as written too;
// fixed, the needs follow the plan again.
func TestAModuleFailingItsPlansChecksKeepsItsNeedsAsWritten(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.settle()
	before := m.needValues("ace", "web")
	if len(before) != 4 {
		t.Fatalf("needs of web: %v, want 4", slices.Sorted(maps.Keys(before)))
	}

	typo := maps.Clone(webTemplates)
	typo["c"] = "flavour = ${config:flavour}\ntoken = ${secret:nope}\n"
	m.assign("ace", "web", webPlan(), typo)
	if r := m.waitState("ace", "web", "failed"); !contains(r["reason"].(string), "names no secret of the plan") {
		t.Fatalf("reason %q", r["reason"])
	}
	m.settle()
	after := m.needValues("ace", "web")
	nope := spec.EncodeKey("ace", "web", "secret", "nope")
	failedNope := after[nope]
	if !contains(failedNope, `"state":"failed"`) {
		t.Errorf("a failed placeholder check: need %s is %q, want it failed", nope, failedNope)
	}
	delete(after, nope)
	if !maps.Equal(after, before) {
		t.Errorf("a failed placeholder check: needs %v, want them as written %v", after, before)
	}

	bad := webPlan()
	bad.Files[1].Mode = "bogus"
	m.assign("ace", "web", bad, webTemplates)
	m.waitState("ace", "web", "failed")
	m.settle()
	withNope := maps.Clone(before)
	withNope[nope] = failedNope
	if after := m.needValues("ace", "web"); !maps.Equal(after, withNope) {
		t.Errorf("a plan breaking a rule: needs %v, want them as written %v", after, withNope)
	}

	fixed := maps.Clone(webTemplates)
	fixed["c"] = "state again = ${dir:state}\n" // config:flavour no longer named
	m.assign("ace", "web", webPlan(), fixed)
	m.waitState("ace", "web", "applied")
	m.settle()
	if after := m.needValues("ace", "web"); len(after) != 3 || after[spec.EncodeKey("ace", "web", "config", "flavour")] != "" {
		t.Errorf("fixed: needs %v, want the three its templates name", slices.Sorted(maps.Keys(after)))
	}
}

// A module whose needs are kept while it fails (ModuleView.NeedsUnknown)
// still loses every need when it is taken off the node (SPEC §4.7: nothing
// the client wrote outlives its module): taken off while it fails, its
// client restarted meanwhile, or its value turned into one with no plan.
func TestAModuleTakenOffWhileItFailsLeavesNoNeeds(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.settle()
	if n := len(m.needValues("ace", "web")); n != 4 {
		t.Fatalf("web has %d needs, want 4", n)
	}
	typo := maps.Clone(webTemplates)
	typo["c"] = "flavour = ${config:flavour}\ntoken = ${secret:nope}\n"
	m.assign("ace", "web", webPlan(), typo)
	m.waitState("ace", "web", "failed")
	m.settle()
	if n := len(m.needValues("ace", "web")); n != 5 {
		t.Fatalf("web failing has %d needs, want the 4 written and its failed one", n)
	}
	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitGone(spec.AppliedBucket, "ace.web")
	m.settle()
	if got := m.needValues("ace", "web"); len(got) != 0 {
		t.Errorf("taken off while failing: needs %v remain", slices.Sorted(maps.Keys(got)))
	}

	// Again, the client restarted while it fails, then its value made one
	// with no plan (SPEC §3 r2: not the provisioner's).
	m.assign("ace", "web", webPlan(), webTemplates)
	m.waitState("ace", "web", "applied")
	m.settle()
	m.put(spec.AssignmentsBucket, "ace.web", `{"provisioning":{"files":[{"path":"/etc/web/a.conf","template":"a","mode":"bogus"}]}}`)
	m.waitState("ace", "web", "failed")
	m.settle()
	stop()
	m.client("ace", sameState)
	m.waitState("ace", "web", "failed")
	m.settle()
	if n := len(m.needValues("ace", "web")); n != 4 {
		t.Fatalf("web failing across a restart has %d needs, want the 4 written", n)
	}
	m.put(spec.AssignmentsBucket, "ace.web", `{"runs":{}}`)
	m.waitGone(spec.AppliedBucket, "ace.web")
	m.settle()
	if got := m.needValues("ace", "web"); len(got) != 0 {
		t.Errorf("no plan while failing: needs %v remain", slices.Sorted(maps.Keys(got)))
	}
}

package nodes

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The plan value a view says is kept per assignment (planValue), not
// computed on every View: a new plan with the same templates digest must
// still say a new value, and the same plan put again the same one.
func TestAViewSaysANewPlanValueForEveryNewPlanAndTheSameForTheSamePlan(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	put := func(mode string) string {
		t.Helper()
		if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
			Files: []FileSpec{{Path: "/etc/web.conf", Template: "web.conf", Mode: mode}},
		})).Refused; err != nil {
			t.Fatal(err)
		}
		m.Stabilize()
		return m.View("web").Plan
	}
	first := put("0644")
	if first == "" || m.View("web").Plan != first {
		t.Fatalf("plan value %q, then %q", first, m.View("web").Plan)
	}
	second := put("0600")
	if second == first {
		t.Errorf("a new plan (same templates digest) says the old plan value %q", first)
	}
	if again := put("0644"); again != first {
		t.Errorf("the first plan put again says %q, not %q", again, first)
	}
}

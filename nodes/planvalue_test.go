package nodes

import (
	"hash/maphash"
	"reflect"
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

// A lean view is the view without its needs, and NeedsSum sums the needs
// View lists (met and waiting ones, the waiting with their why) without
// listing them: a need that moves moves the sum.
func TestALeanViewAndTheNeedsSumSayWhatTheViewSays(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files:     []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}},
		Placement: map[string]map[string]string{"port": {"http": "8080"}},
	})).Refused; err != nil {
		t.Fatal(err)
	}
	m.SetArchive("web", digestA, map[string][]byte{"web.conf": []byte("port=${port:http} model=${config:model}\n")})
	m.Stabilize()
	seed := maphash.MakeSeed()
	check := func() uint64 {
		t.Helper()
		v, lean := m.View("web"), m.ViewLean("web")
		if lean.Needs != nil {
			t.Errorf("a lean view lists needs %v", lean.Needs)
		}
		lean.Needs = v.Needs
		if !reflect.DeepEqual(v, lean) {
			t.Errorf("lean view %+v\nview      %+v", lean, v)
		}
		if !reflect.DeepEqual(m.Needs("web"), v.Needs) {
			t.Errorf("needs %v, the view's %v", m.Needs("web"), v.Needs)
		}
		if got, want := m.NeedsSum("web", seed), SumNeeds(seed, v.Needs); got != want {
			t.Errorf("NeedsSum %x, SumNeeds of the view's %x", got, want)
		}
		return m.NeedsSum("web", seed)
	}
	waiting := check()
	if v := m.View("web"); len(v.Needs) != 2 || v.Needs[0].Why == "" {
		t.Fatalf("needs %+v: want config:model waiting, with why", v.Needs)
	}
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("m1"))
	m.Stabilize()
	met := check()
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("m2"))
	m.Stabilize()
	if again := check(); met == waiting || again != met {
		t.Errorf("sums: waiting %x, met %x, met with another value %x", waiting, met, again)
	}
	// A new plan reading another placeholder: other needs, another sum.
	if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files:     []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}},
		Placement: map[string]map[string]string{"port": {"http": "8081"}},
	})).Refused; err != nil {
		t.Fatal(err)
	}
	m.SetArchive("web", digestA, map[string][]byte{"web.conf": []byte("port=${port:http} size=${config:size}\n")})
	m.Stabilize()
	if replanned := check(); replanned == met {
		t.Errorf("needs of another plan sum as the old ones: %x", met)
	}
	if m.NeedsSum("gone", seed) != 0 || m.Needs("gone") != nil || m.ViewLean("gone") != nil {
		t.Error("a module not on the node has a view or needs")
	}
}

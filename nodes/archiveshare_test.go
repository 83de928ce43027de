package nodes

import (
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §3: a second plan naming the same digest fetches nothing. A module
// whose plan names an archive another module holds, and a module whose
// plan is fixed after being refused (its archive kept meanwhile), are
// filled at once: no fetch asked, no "not fetched yet" in between (an
// outside audit saw a report go applied → waiting → applied for the
// moments the cache took to answer).
func TestAPlanNamingAnArchiveHeldAlreadyIsFilledWithoutAFetch(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	tmpl := map[string][]byte{"t": []byte("static\n")}
	m.Put(spec.AssignmentsBucket, "ace.one", planJSON("ace", "one", Plan{Files: []FileSpec{{Path: "/etc/one", Template: "t"}}}))
	if w := m.TakeNewArchives(); len(w) != 1 {
		t.Fatalf("the first plan asked %v, want one fetch", w)
	}
	m.SetArchive("one", digestA, tmpl)
	m.Stabilize()

	m.Put(spec.AssignmentsBucket, "ace.two", planJSON("ace", "two", Plan{Files: []FileSpec{{Path: "/etc/two", Template: "t"}}}))
	if w := m.TakeNewArchives(); len(w) != 0 {
		t.Errorf("a second plan naming the same digest asked %v", w)
	}
	m.Stabilize()
	if v := m.View("two"); v.State != graph.Ready {
		t.Errorf("two is %v %q, want ready at once", v.State, v.Reason)
	}

	// refused for a rule, then fixed: its archive was kept
	m.Put(spec.AssignmentsBucket, "ace.one", planJSON("ace", "one", Plan{Files: []FileSpec{{Path: "/etc/one", Template: "t", Mode: "bogus"}}}))
	m.Stabilize()
	if v := m.View("one"); v.State != graph.Failed {
		t.Fatalf("one is %v, want failed for its mode", v.State)
	}
	m.Put(spec.AssignmentsBucket, "ace.one", planJSON("ace", "one", Plan{Files: []FileSpec{{Path: "/etc/one", Template: "t"}}}))
	if w := m.TakeNewArchives(); len(w) != 0 {
		t.Errorf("a plan fixed asked %v", w)
	}
	m.Stabilize()
	if v := m.View("one"); v.State != graph.Ready {
		t.Errorf("one fixed is %v %q, want ready at once", v.State, v.Reason)
	}
}

package nodes

import (
	"strings"
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

// A template missing from an archive held already is said naming that
// archive by the plan's digest, not only by the plan's ref: the ref was
// not read (the digest was held), and may hold the template (an outside
// audit was told it was "not in the templates archive file:///…/t2.tgz",
// which held it).
func TestATemplateMissingFromAnArchiveHeldAlreadyIsSaidByTheDigest(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.one", planJSON("ace", "one", Plan{Files: []FileSpec{{Path: "/etc/one", Template: "t"}}}))
	m.SetArchive("one", digestA, map[string][]byte{"t": []byte("static\n")})
	m.Stabilize()

	two := Plan{Files: []FileSpec{{Path: "/etc/two", Template: "pl.conf"}}, Templates: TemplatesRef{Ref: "file:///t/t2.tgz", Digest: digestA}}
	m.Put(spec.AssignmentsBucket, "ace.two", planJSON("ace", "two", two))
	m.Stabilize()
	v := m.View("two")
	want := `files[0] (/etc/two): template "pl.conf" is not in the templates archive sha256:aaaaaaaaaaaa… (the plan's digest; ref file:///t/t2.tgz)`
	if v.State != graph.Failed || !strings.Contains(v.Reason, want) {
		t.Fatalf("two is %v %q, want failed saying %q", v.State, v.Reason, want)
	}
}

package nodes

import (
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Until a provider's bucket is read, a binding it does not hold is not
// said "not written yet" (nobody knows yet), and the modules reading the
// bucket are named, so the daemon holds what it says of them; once it is
// read, the entry missing is said as ever. A bucket watched anew after no
// plan read it (ForgetBound) is read anew.
func TestABindingOfABucketNotReadYetIsNotSaidUnwritten(t *testing.T) {
	m := webMesh(t)
	m.Put(spec.AssignmentsBucket, "zed.gitea", planJSON("zed", "gitea", Plan{Provides: []Offer{{Provision: "repo"}}}))
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", Plan{Files: []FileSpec{{Path: "/etc/app", Template: "t"}},
		Provisions: []ProvisionSpec{{Provider: "gitea", Provision: "repo", Credential: "token"}}}))
	m.SetArchive("app", digestA, map[string][]byte{"t": []byte("${bound:repo:url}")})
	m.Stabilize()
	if got := m.UnreadBuckets(); !slices.Equal(got, []string{"gitea_bound"}) {
		t.Fatalf("unread buckets %q", got)
	}
	if got := m.ModulesReading(m.UnreadBuckets()); len(got) != 1 || !got["app"] {
		t.Fatalf("modules reading %v, want app", got)
	}
	v := m.View("app")
	if v.State != graph.Waiting || strings.Contains(v.Reason+needsWhy(v), "not written yet") ||
		!strings.Contains(needsWhy(v), "gitea_bound ace.app.repo: not read yet (the client's first read of gitea_bound is under way)") {
		t.Fatalf("before the bucket is read: %v %q %q", v.State, v.Reason, needsWhy(v))
	}

	awaited := func(string) bool { return true }
	if got := m.HoldUnread([]string{"app"}, awaited); len(got) != 0 || !m.HoldsUnread("app") {
		t.Fatalf("app not held while gitea_bound is not read: %q, %v", got, m.HoldsUnread("app"))
	}

	m.BucketRead("gitea_bound")
	m.Stabilize()
	if got := m.HoldUnread(nil, awaited); !slices.Equal(got, []string{"app"}) || m.HoldsUnread("app") {
		t.Fatalf("app not let go once gitea_bound is read: %q, %v", got, m.HoldsUnread("app"))
	}
	if got := m.UnreadBuckets(); len(got) != 0 {
		t.Fatalf("unread buckets after the read %q", got)
	}
	if v := m.View("app"); !strings.Contains(needsWhy(v), "gitea_bound ace.app.repo: not written yet") {
		t.Fatalf("read, the entry not there: %v %q", v.State, needsWhy(v))
	}

	m.ForgetBound("gitea_bound")
	m.Put("gitea_bound", "ace.app.repo", []byte(`{"state":"bound","values":{"url":"u"}}`))
	m.Stabilize()
	if v := m.View("app"); v.State != graph.Ready {
		t.Fatalf("an entry there is read whether the bucket was read whole or not: %v %q", v.State, needsWhy(v))
	}
	if got := m.UnreadBuckets(); !slices.Equal(got, []string{"gitea_bound"}) {
		t.Fatalf("forgotten, the bucket is to be read again: %q", got)
	}
}

func needsWhy(v *ModuleView) string {
	var b strings.Builder
	for _, n := range v.Needs {
		b.WriteString(n.Why + "\n")
	}
	return b.String()
}

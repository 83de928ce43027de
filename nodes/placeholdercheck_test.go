package nodes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A template named by many files (or items) is checked once: its fault is
// said once in the module's reason, not once per file naming it. (Checked
// per file, a plan of 10,000 files naming one template of 4,096
// placeholders held the client's loop for hours, and its reason repeated
// every fault 10,000 times.)
func TestAPlaceholderFaultIsSaidOnceHoweverManyFilesNameItsTemplate(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	p := Plan{Secrets: []SecretSpec{{Name: "api"}}, Collections: []CollectionSpec{{Name: "c", Comment: "#"}}}
	for i := range 5 {
		p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/x/%d", i), Template: "t"})
		p.Items = append(p.Items, ItemSpec{Collection: fmt.Sprintf("c%d", i), Template: "i"})
	}
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestA, map[string][]byte{
		"t": []byte("${secret:api} ${secret:nope} ${collected:c} ${collected:d}"),
		"i": []byte("${secret:api}"),
	})
	m.Stabilize()
	v := m.View("x")
	if v.State != graph.Failed {
		t.Fatalf("%v %q, want failed", v.State, v.Reason)
	}
	for _, want := range []string{
		"t:1:15: ${secret:nope} names no secret of the plan",
		"t:1:45: ${collected:d} names collection d which collections[] does not list",
		"i:1:1: an item names ${secret:api}",
	} {
		if n := strings.Count(v.Reason, want); n != 1 {
			t.Errorf("the reason says %q %d times, want once: %q", want, n, v.Reason)
		}
	}
	if strings.Contains(v.Reason, "${secret:api} names") || strings.Contains(v.Reason, "${collected:c} names") {
		t.Errorf("the reason refuses a placeholder the plan holds: %q", v.Reason)
	}
}

// A module whose files name more placeholders in all than
// MaxModulePlaceholders (each file its template's distinct ones) fails
// with the limit named, before any of its files is wired: a small plan
// naming one big template from many files made tens of millions of edges.
// One at the limit is taken.
func TestAModuleNamingTooManyPlaceholdersInAllFailsNamingTheLimit(t *testing.T) {
	var tmpl strings.Builder
	const per = 4096
	for i := range per {
		fmt.Fprintf(&tmpl, "${config:k%d}\n", i)
	}
	files := func(n int) Plan {
		var p Plan
		for i := range n {
			p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/x/%d", i), Template: "t"})
		}
		return p
	}
	m := NewNodeGraph("ace")
	registryAll(m)
	over := spec.MaxModulePlaceholders/per + 1
	m.Put(spec.AssignmentsBucket, "ace.big", planJSON("ace", "big", files(over)))
	m.SetArchive("big", digestA, map[string][]byte{"t": []byte(tmpl.String())})
	m.Stabilize()
	v := m.View("big")
	if v.State != graph.Failed || !strings.Contains(v.Reason, "MaxModulePlaceholders") || !strings.Contains(v.Reason, fmt.Sprint(over*per)) {
		t.Fatalf("%v %q, want failed naming MaxModulePlaceholders and %d", v.State, v.Reason, over*per)
	}
	if len(v.Files) != 0 {
		t.Errorf("%d files wired for a module refused", len(v.Files))
	}

	// At the limit it is taken (counted alone: wiring a million edges is
	// seconds under -race).
	at := files(over - 1)
	tm, err := ParseTemplate("t", []byte(tmpl.String()))
	if err != nil {
		t.Fatal(err)
	}
	if msg := tooManyPlaceholders(&at, map[string]*Template{"t": tm}); msg != "" {
		t.Errorf("%d placeholders in all refused: %s", (over-1)*per, msg)
	}
}

// A template that does not parse, or that the archive lacks, is said once
// however many files and items name it, the missing one at the first.
func TestABrokenOrMissingTemplateIsSaidOnceHoweverManyFilesNameIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	var p Plan
	for i := range 3 {
		p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/x/%d", i), Template: "broken"},
			FileSpec{Path: fmt.Sprintf("/etc/y/%d", i), Template: "gone"})
		p.Items = append(p.Items, ItemSpec{Collection: fmt.Sprintf("c%d", i), Template: "broken"})
	}
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestA, map[string][]byte{"broken": []byte("a ${config:x\n")})
	m.Stabilize()
	v := m.View("x")
	for _, want := range []string{`broken:1:3: unclosed "${"`, `files[1] (/etc/y/0): template "gone" is not in the templates archive`, `template "gone"`} {
		if n := strings.Count(v.Reason, want); n != 1 {
			t.Errorf("the reason says %q %d times, want once: %q", want, n, v.Reason)
		}
	}
}

// Each placeholder that fails its module at plan level is one of the
// view's FailedNeeds, failed, its why what the reason says of it (each
// template's, once); a module failing for no placeholder has none, and
// neither has a fixed one.
func TestThePlaceholdersAtFaultAreTheViewsFailedNeeds(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	p := Plan{Secrets: []SecretSpec{{Name: "api"}}, Collections: []CollectionSpec{{Name: "c", Comment: "#"}}}
	p.Files = []FileSpec{{Path: "/etc/x/a", Template: "t"}, {Path: "/etc/x/b", Template: "t"}}
	p.Items = []ItemSpec{{Collection: "c0", Template: "i"}}
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestA, map[string][]byte{
		"t": []byte("${secret:api} ${secret:nope} ${collected:c} ${collected:d} ${bound:b}"),
		"i": []byte("${secret:api} ${secret:nope}"),
	})
	m.Stabilize()
	v := m.View("x")
	if v.State != graph.Failed || !v.NeedsUnknown {
		t.Fatalf("%v %q (needs unknown %v), want failed", v.State, v.Reason, v.NeedsUnknown)
	}
	want := []NeedView{
		{Kind: "bound", Name: "b", State: graph.Failed, Why: `t:1:60: ${bound:b}: bound name "b": want <provision>[/<local>]:<key>`},
		{Kind: "collected", Name: "d", State: graph.Failed, Why: "t:1:45: ${collected:d} names collection d which collections[] does not list"},
		{Kind: "secret", Name: "api", State: graph.Failed, Why: "i:1:1: an item names ${secret:api}: an item is kept in a bucket, and no secret is"},
		{Kind: "secret", Name: "nope", State: graph.Failed, Why: "t:1:15: ${secret:nope} names no secret of the plan (secrets[] or a named provisions[] entry); " +
			"i:1:15: an item names ${secret:nope}: an item is kept in a bucket, and no secret is"},
	}
	if !slices.Equal(v.FailedNeeds, want) {
		t.Errorf("failed needs\n %+v\nwant\n %+v", v.FailedNeeds, want)
	}
	for _, n := range v.FailedNeeds {
		for why := range strings.SplitSeq(n.Why, "; ") {
			if !strings.Contains(v.Reason, why) {
				t.Errorf("the reason %q does not say %q", v.Reason, why)
			}
		}
	}

	const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	const digestC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	p.Templates.Ref = "file:///t/x.tar"

	// A kind this client does not fill.
	p.Templates.Digest = digestB
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestB, map[string][]byte{"t": []byte("${made-up:q}"), "i": []byte("")})
	m.Stabilize()
	if v := m.View("x"); len(v.FailedNeeds) != 1 || v.FailedNeeds[0].Kind != "made-up" || v.FailedNeeds[0].Name != "q" ||
		v.FailedNeeds[0].Why != `t:1:1: placeholder ${made-up:q}: kind "made-up" is not one this client fills` {
		t.Errorf("a kind not filled: failed needs %+v", v.FailedNeeds)
	}

	// Failing for no placeholder (a mode others may write), then fixed.
	p.Templates.Digest = digestC
	p.Files[0].Mode = "0666"
	p.Files[0].Template = "i"
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestC, map[string][]byte{"t": []byte("${secret:api}"), "i": []byte("")})
	m.Stabilize()
	if v := m.View("x"); v.State != graph.Failed || v.FailedNeeds != nil {
		t.Errorf("failing for its mode: %v %q, failed needs %+v, want none", v.State, v.Reason, v.FailedNeeds)
	}
	p.Files[0].Mode = ""
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.Stabilize()
	if v := m.View("x"); v.State == graph.Failed || v.FailedNeeds != nil {
		t.Errorf("fixed: %v %q, failed needs %+v, want none", v.State, v.Reason, v.FailedNeeds)
	}
}

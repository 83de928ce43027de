package nodes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func planJSON(node, mod string, p Plan) []byte {
	if p.Templates.Ref == "" {
		p.Templates = TemplatesRef{Ref: "file:///t/" + mod + ".tar", Digest: digestA}
	}
	b, _ := json.Marshal(Assignment{Node: node, Module: mod, Provisioning: p})
	return b
}

func registryAll(m *NodeGraph) {
	for _, r := range spec.Kinds() {
		m.Put(spec.RegistryBucket, string(r.Kind), []byte(`{"kind":"`+string(r.Kind)+`"}`))
	}
}

func file(m *NodeGraph, mod, path string) FileView {
	for _, f := range m.View(mod).Files {
		if f.Path == path {
			return f
		}
	}
	return FileView{}
}

func TestAPlanWithItsValuesRendersItsFiles(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files:     []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}, {Path: "/etc/other", Template: "other"}},
		Placement: map[string]map[string]string{"port": {"http": "8080"}},
	})).Refused; err != nil {
		t.Fatal(err)
	}
	if w := m.TakeNewArchives(); len(w) != 1 || w[0].Module != "web" {
		t.Fatalf("archives wanted %v", w)
	}
	m.SetArchive("web", digestA, map[string][]byte{
		"web.conf": []byte("port=${port:http} model=${config:model}\n"),
		"other":    []byte("static $${literal}\n"),
	})
	m.Stabilize()
	v := m.View("web")
	if v.State != graph.Waiting || !strings.Contains(v.Reason, "mesh-config_resolved ace.web.model: not written yet") {
		t.Fatalf("state %v reason %q", v.State, v.Reason)
	}
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("${secret:x}"))
	if got := m.Stabilize(); len(got) != 1 || got[0] != "web" {
		t.Fatalf("touched %v", got)
	}
	f := file(m, "web", "/etc/web.conf")
	if string(f.Value.mustBytes()) != "port=8080 model=${secret:x}\n" || f.Value.Spec.Mode != "0644" {
		t.Fatalf("content %q mode %s", f.Value.mustBytes(), f.Value.Spec.Mode)
	}
	if got := string(file(m, "web", "/etc/other").Value.mustBytes()); got != "static ${literal}\n" {
		t.Fatalf("other %q", got)
	}
	if len(m.TakeNewSecrets()) != 0 {
		t.Fatal("a config value holding ${secret:x} asked the vault")
	}
}

func TestABrokenPlanFailsThatModuleAlone(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.good", planJSON("ace", "good", Plan{Files: []FileSpec{{Path: "/etc/good", Template: "g"}}}))
	m.SetArchive("good", digestA, map[string][]byte{"g": []byte("fine\n")})
	err := m.Put(spec.AssignmentsBucket, "ace.bad", []byte(`{"node":"ace","module":"bad","provisioning":{"files":"nope"}}`)).Refused
	if err == nil {
		t.Fatal("no error for a broken plan")
	}
	m.Stabilize()
	if v := m.View("bad"); v.State != graph.Failed || !strings.Contains(v.Reason, "files") {
		t.Fatalf("bad %v %q", v.State, v.Reason)
	}
	if v := m.View("good"); v.State != graph.Ready {
		t.Fatalf("good %v %q", v.State, v.Reason)
	}
}

func collectorPlan(node, mod, coll string) []byte {
	return planJSON(node, mod, Plan{
		Files:       []FileSpec{{Path: "/etc/" + mod, Template: "t"}},
		Collections: []CollectionSpec{{Name: coll, Comment: "#"}},
	})
}

func TestCollectedTextIsOrderedByContributorWithCommentLines(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "shell:zsh:normal"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${shell:zsh:normal}")})
	for _, c := range []string{"b-mod", "a-mod", "c-mod"} {
		m.Put(spec.AssignmentsBucket, "ace."+c, planJSON("ace", c, Plan{Items: []ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}}))
		m.SetArchive(c, digestA, map[string][]byte{"i": []byte("alias " + c)})
	}
	m.Stabilize()
	got := string(file(m, "zsh", "/etc/zsh").Value.mustBytes())
	want := "# a-mod\nalias a-mod\n# b-mod\nalias b-mod\n# c-mod\nalias c-mod\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	m.Delete(spec.AssignmentsBucket, "ace.b-mod")
	if touched := m.Stabilize(); strings.Join(touched, ",") != "zsh" {
		t.Fatalf("touched %v", touched)
	}
	if got := string(file(m, "zsh", "/etc/zsh").Value.mustBytes()); got != "# a-mod\nalias a-mod\n# c-mod\nalias c-mod\n" {
		t.Fatalf("after removal %q", got)
	}
}

func TestACycleOfCollectionsFailsEveryModuleOnItWithTheCycleNamed(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{
		Items: []ItemSpec{{Collection: "c2", Template: "i"}}, Collections: []CollectionSpec{{Name: "c1", Comment: "#"}}}))
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("${collected:c1}")})
	// b's item is first in c3, then moved to c1: the cycle is closed where
	// c1 takes the item in.
	m.Put(spec.AssignmentsBucket, "ace.b", planJSON("ace", "b", Plan{
		Items: []ItemSpec{{Collection: "c3", Template: "i"}}, Collections: []CollectionSpec{{Name: "c2", Comment: "#"}}}))
	m.SetArchive("b", digestA, map[string][]byte{"i": []byte("${collected:c2}")})
	m.Stabilize()
	if v := m.View("b"); v.State != graph.Ready {
		t.Fatalf("b before the cycle: %v %q", v.State, v.Reason)
	}
	m.Put(spec.AssignmentsBucket, "ace.b", planJSON("ace", "b", Plan{
		Items: []ItemSpec{{Collection: "c1", Template: "i"}}, Collections: []CollectionSpec{{Name: "c2", Comment: "#"}}}))
	m.Stabilize()
	want := "collection cycle: c1 → item a/c2 → c2 → item b/c1 → c1"
	for _, mod := range []string{"a", "b"} {
		v := m.View(mod)
		if v.State != graph.Failed || !strings.HasPrefix(v.Reason, want) {
			t.Fatalf("%s: %v %q, want the reason to start with %q", mod, v.State, v.Reason, want)
		}
	}
	// z contributes to c1 too, and a collects c1 in a file; then a's item
	// stops naming c1 and the cycle is broken: c1 takes b's item back (last
	// in the engine's inputs) and must still list b before z.
	m.Put(spec.AssignmentsBucket, "ace.z", planJSON("ace", "z", Plan{Items: []ItemSpec{{Collection: "c1", Template: "i"}}}))
	m.SetArchive("z", digestA, map[string][]byte{"i": []byte("z-item")})
	const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Templates: TemplatesRef{Ref: "file:///t/a.tar", Digest: digestB},
		Files: []FileSpec{{Path: "/etc/a", Template: "f"}},
		Items: []ItemSpec{{Collection: "c2", Template: "i"}}, Collections: []CollectionSpec{{Name: "c1", Comment: "#"}}}))
	m.SetArchive("a", digestB, map[string][]byte{"i": []byte("a-item"), "f": []byte("${collected:c1}")})
	m.Stabilize()
	for _, mod := range []string{"a", "b", "z"} {
		if v := m.View(mod); v.State != graph.Ready {
			t.Fatalf("%s after the cycle is broken: %v %q", mod, v.State, v.Reason)
		}
	}
	if got, want := string(file(m, "a", "/etc/a").Value.mustBytes()), "# b\n# a\na-item\n# z\nz-item\n"; got != want {
		t.Fatalf("collected c1 %q, want %q", got, want)
	}
}

// A cycle closed by re-wiring an item (its template now names a collection
// that leads back) and then broken again: the refused input comes back in
// another place, and every value must still land in its own placeholder and
// the collection stay ordered by contributor.
func TestACycleBrokenAgainRendersEveryValueInItsOwnPlace(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	planA := func(digest string) []byte {
		return planJSON("ace", "a", Plan{Templates: TemplatesRef{Ref: "file:///t/a.tar", Digest: digest},
			Files: []FileSpec{{Path: "/etc/a", Template: "f"}},
			Items: []ItemSpec{{Collection: "c2", Template: "i"}}, Collections: []CollectionSpec{{Name: "c1", Comment: "#"}}})
	}
	planB := func(digest string) []byte {
		return planJSON("ace", "b", Plan{Templates: TemplatesRef{Ref: "file:///t/b.tar", Digest: digest},
			Items: []ItemSpec{{Collection: "c1", Template: "i"}}, Collections: []CollectionSpec{{Name: "c2", Comment: "//"}}})
	}
	m.Put(spec.ConfigBucket, "ace.a.v", []byte("V"))
	m.Put(spec.AssignmentsBucket, "ace.a", planA(digestA))
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("a-item"), "f": []byte("${collected:c1}")})
	m.Put(spec.AssignmentsBucket, "ace.b", planB(digestA))
	m.SetArchive("b", digestA, map[string][]byte{"i": []byte("${collected:c2}")})
	m.Put(spec.AssignmentsBucket, "ace.z", planJSON("ace", "z", Plan{Items: []ItemSpec{{Collection: "c1", Template: "i"}}}))
	m.SetArchive("z", digestA, map[string][]byte{"i": []byte("z-item")})
	m.Stabilize()
	if got := string(file(m, "a", "/etc/a").Value.mustBytes()); got != "# b\n// a\na-item\n# z\nz-item\n" {
		t.Fatalf("before the cycle: %q", got)
	}
	// a's item now names c1, which holds b's item, which names c2, which holds a's item.
	m.Put(spec.AssignmentsBucket, "ace.a", planA(digestB))
	m.SetArchive("a", digestB, map[string][]byte{"i": []byte("${collected:c1}|${config:v}"), "f": []byte("${collected:c1}")})
	m.Stabilize()
	for _, mod := range []string{"a", "b"} {
		if v := m.View(mod); v.State != graph.Failed || !strings.Contains(v.Reason, "collection cycle: c1 → ") {
			t.Fatalf("%s: %v %q", mod, v.State, v.Reason)
		}
	}
	if v := m.View("z"); v.State != graph.Ready {
		t.Fatalf("z, not on the cycle: %v %q", v.State, v.Reason)
	}
	// b's item no longer names c2: the cycle is broken.
	m.Put(spec.AssignmentsBucket, "ace.b", planB(digestB))
	m.SetArchive("b", digestB, map[string][]byte{"i": []byte("b-item")})
	m.Stabilize()
	for _, mod := range []string{"a", "b", "z"} {
		if v := m.View(mod); v.State != graph.Ready {
			t.Fatalf("%s after the cycle is broken: %v %q", mod, v.State, v.Reason)
		}
	}
	c1 := "# b\nb-item\n# z\nz-item\n"
	if got := string(file(m, "a", "/etc/a").Value.mustBytes()); got != c1 {
		t.Fatalf("collected c1 %q, want %q", got, c1)
	}
	if got := string(m.View("a").Items[0].Text); got != c1+"|V" {
		t.Fatalf("a's item %q, want %q", got, c1+"|V")
	}
}

func TestAnItemNamingASecretOrConsumersOrACollectorNamingAnUnlistedCollectionFails(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.s", planJSON("ace", "s", Plan{Secrets: []SecretSpec{{Name: "k"}},
		Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	m.SetArchive("s", digestA, map[string][]byte{"i": []byte("x\ntoken=${secret:k}\n")})
	m.Put(spec.AssignmentsBucket, "ace.p", planJSON("ace", "p", Plan{Provides: []Offer{{Provision: "read"}},
		Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	m.SetArchive("p", digestA, map[string][]byte{"i": []byte("${consumers:read}")})
	m.Put(spec.AssignmentsBucket, "ace.u", planJSON("ace", "u", Plan{Files: []FileSpec{{Path: "/etc/u", Template: "f"}},
		Collections: []CollectionSpec{{Name: "c", Comment: "#"}}}))
	m.SetArchive("u", digestA, map[string][]byte{"f": []byte("${collected:c}\n${shell:zsh:normal}")})
	m.Stabilize()
	for mod, want := range map[string]string{
		"s": "i:2:7: an item names ${secret:k}: an item is kept in a bucket, and no secret is",
		"p": "i:1:1: an item names ${consumers:read}",
		"u": "f:2:1: ${shell:zsh:normal} names collection shell:zsh:normal which collections[] does not list",
	} {
		if v := m.View(mod); v.State != graph.Failed || !strings.Contains(v.Reason, want) {
			t.Fatalf("%s: %v %q, want it to say %q", mod, v.State, v.Reason, want)
		}
	}
	if len(m.TakeNewSecrets()) != 0 {
		t.Fatal("a refused item asked the vault")
	}
}

func TestAnItemWaitingForItsTemplatesIsShownAndLeftOutOfItsCollection(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "c"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${collected:c}")})
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	m.Stabilize()
	v := m.View("a")
	if len(v.Items) != 1 || v.Items[0].State != graph.Waiting || !strings.Contains(v.Items[0].Why, "not fetched yet") {
		t.Fatalf("items %+v", v.Items)
	}
	if got := file(m, "zsh", "/etc/zsh"); got.Value == nil || len(got.Value.mustBytes()) != 0 {
		t.Fatalf("collector %+v", got)
	}
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("")})
	m.Stabilize()
	if got := string(file(m, "zsh", "/etc/zsh").Value.mustBytes()); got != "# a\n\n" {
		t.Fatalf("an empty item: %q", got)
	}
}

// SPEC §4.4: a collection is the items recorded. An item that waits after
// having been ready is still recorded (the stage keeps it in the collect
// bucket), so its collection keeps its last text and its collectors are not
// rendered again; one that fails is deleted there, so it leaves the
// collection, and does not come back by waiting; one that goes leaves it.
func TestAWaitingItemKeepsItsLastTextInItsCollectionUntilItFailsOrGoes(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "c"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${collected:c}")})
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("x=${config:k}\n")})
	m.Put(spec.ConfigBucket, "ace.a.k", []byte("1"))
	m.Stabilize()
	collected := func(mod string) string {
		t.Helper()
		f := file(m, mod, "/etc/"+mod)
		if f.Value == nil {
			t.Fatalf("collector %s: %+v", mod, f)
		}
		return string(f.Value.mustBytes())
	}
	itemState := func(want graph.State) {
		t.Helper()
		if v := m.View("a"); len(v.Items) != 1 || v.Items[0].State != want {
			t.Fatalf("item of a: %+v, want %v", v.Items, want)
		}
	}
	if got := collected("zsh"); got != "# a\nx=1\n" {
		t.Fatalf("ready: %q", got)
	}

	// It waits: the collector keeps its text and is not rendered again.
	files := m.Renders().Files.Load()
	m.Delete(spec.ConfigBucket, "ace.a.k")
	touched := m.Stabilize()
	itemState(graph.Waiting)
	if got := collected("zsh"); got != "# a\nx=1\n" {
		t.Fatalf("waiting: %q", got)
	}
	if slices.Contains(touched, "zsh") || m.Renders().Files.Load() != files {
		t.Fatalf("a waiting item moved its collector: touched %v, %d renders", touched, m.Renders().Files.Load()-files)
	}
	// A collector that comes while it waits has it too.
	m.Put(spec.AssignmentsBucket, "ace.zsh2", collectorPlan("ace", "zsh2", "c"))
	m.SetArchive("zsh2", digestA, map[string][]byte{"t": []byte("${collected:c}")})
	m.Stabilize()
	if got := collected("zsh2"); got != "# a\nx=1\n" {
		t.Fatalf("a collector made while the item waits: %q", got)
	}
	// Its templates move and it waits for them: still the same node, still
	// its last text.
	m.Put(spec.ConfigBucket, "ace.a.k", []byte("2"))
	m.Stabilize()
	if got := collected("zsh"); got != "# a\nx=2\n" {
		t.Fatalf("ready again: %q", got)
	}
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}},
		Templates: TemplatesRef{Ref: "file:///t/a2.tar", Digest: "sha256:" + strings.Repeat("b", 64)}}))
	m.Stabilize()
	itemState(graph.Waiting)
	if got := collected("zsh"); got != "# a\nx=2\n" {
		t.Fatalf("waiting for its templates: %q", got)
	}
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("x=${config:k}\n")})
	m.Stabilize()
	itemState(graph.Ready)

	// It fails (over the limit of an item): it leaves; waiting then does
	// not bring it back.
	m.Put(spec.ConfigBucket, "ace.a.k", []byte(strings.Repeat("y", spec.MaxItemBytes)))
	m.Stabilize()
	itemState(graph.Failed)
	if got := collected("zsh"); got != "" {
		t.Fatalf("failed: %q", got)
	}
	m.Delete(spec.ConfigBucket, "ace.a.k")
	m.Stabilize()
	itemState(graph.Waiting)
	if got := collected("zsh"); got != "" {
		t.Fatalf("waiting after it failed: %q", got)
	}

	// Ready, waiting, then taken off the node: it leaves, and nothing of it
	// is kept.
	m.Put(spec.ConfigBucket, "ace.a.k", []byte("3"))
	m.Stabilize()
	m.Delete(spec.ConfigBucket, "ace.a.k")
	m.Stabilize()
	if got := collected("zsh"); got != "# a\nx=3\n" {
		t.Fatalf("waiting again: %q", got)
	}
	m.Delete(spec.AssignmentsBucket, "ace.a")
	m.Stabilize()
	if got := collected("zsh"); got != "" {
		t.Fatalf("taken off: %q", got)
	}
	if len(m.itemsKept) != 0 {
		t.Fatalf("%d item texts kept after their items went", len(m.itemsKept))
	}
}

// A consumer's plan refused for a reason that is not its binding (a bad
// mode) binds it all the same, on this node as on any other: whether a
// consumer is listed does not hang on where its plan is.
func TestARefusedPlanBindsItsConsumerOnAnyNode(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	bad := func(node string) []byte {
		return planJSON(node, "cc", Plan{
			Files:      []FileSpec{{Path: "/etc/cc/x", Template: "x", Mode: "bogus"}},
			Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}})
	}
	m.Put(spec.AssignmentsBucket, "ace.cc", bad("ace"))
	m.Put(spec.AssignmentsBucket, "g14.cc", bad("g14"))
	wanted := m.TakeNewSecrets()
	slices.Sort(wanted)
	if want := []string{"pair/gitea/gitea-read/ace/cc", "pair/gitea/gitea-read/g14/cc"}; !slices.Equal(wanted, want) {
		t.Fatalf("asked for %v, want %v", wanted, want)
	}
	m.Stabilize()
	if v := m.View("cc"); v == nil || v.State != graph.Failed {
		t.Fatalf("the refused plan's module: %+v", v)
	}
}

func TestConsumersListsTheBoundConsumersWhoseCredentialIsThere(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	consumer := func(node string) []byte {
		return planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}})
	}
	m.Put(spec.AssignmentsBucket, "g14.cc", consumer("g14"))
	m.Put(spec.AssignmentsBucket, "ace.cc", consumer("ace"))
	m.Put(spec.AssignmentsBucket, "zed.cc", consumer("zed"))
	wanted := m.TakeNewSecrets()
	if len(wanted) != 3 {
		t.Fatalf("wanted %v", wanted)
	}
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("s-ace"), time.Time{})
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"), time.Time{})
	m.SecretWaiting("pair/gitea/gitea-read/zed/cc", "absent", time.Now())
	m.Stabilize()
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	var list []map[string]string
	if err := json.Unmarshal(f.Value.mustBytes(), &list); err != nil || len(list) != 2 || list[0]["consumer"] != "ace" || list[1]["value"] != "s-g14" || f.Value.Spec.Mode != "0600" {
		t.Fatalf("consumers %s %v mode %s", f.Value.mustBytes(), err, f.Value.Spec.Mode)
	}
	m.Put(spec.AssignmentsBucket, "h.cc", consumer("h"))
	if w := m.TakeNewSecrets(); len(w) != 1 || w[0] != "pair/gitea/gitea-read/h/cc" {
		t.Fatalf("one binding asks %v", w)
	}
	m.Delete(spec.AssignmentsBucket, "g14.cc")
	m.Stabilize()
	if m.WantsSecret("pair/gitea/gitea-read/g14/cc") {
		t.Fatal("an unbound consumer's credential is still held")
	}
}

// 200 modules, 20 collections: one item changes → only that collection's
// collectors render again.
func TestOneItemChangeRendersOnlyItsCollectors(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	for i := 0; i < 200; i++ {
		mod := fmt.Sprint("m", i)
		coll := fmt.Sprint("c", i%20)
		p := Plan{
			Files:       []FileSpec{{Path: "/etc/" + mod, Template: "f"}},
			Items:       []ItemSpec{{Collection: coll, Template: "i"}},
			Collections: []CollectionSpec{{Name: fmt.Sprint("c", (i+1)%20), Comment: "#"}},
		}
		m.Put(spec.AssignmentsBucket, "ace."+mod, planJSON("ace", mod, p))
		m.SetArchive(mod, digestA, map[string][]byte{
			"f": []byte(fmt.Sprintf("${collected:c%d}", (i+1)%20)),
			"i": []byte("item ${config:v}"),
		})
		m.Put(spec.ConfigBucket, "ace."+mod+".v", []byte("1"))
	}
	m.Stabilize()
	files, items := m.Renders().Files.Load(), m.Renders().Items.Load()
	m.Put(spec.ConfigBucket, "ace.m5.v", []byte("2")) // m5's item is in c5, collected by m4, m24, …
	touched := m.Stabilize()
	want := []string{"m5"}
	for i := 0; i < 200; i++ {
		if (i+1)%20 == 5 {
			want = append(want, fmt.Sprint("m", i))
		}
	}
	if len(touched) != len(want) {
		t.Fatalf("touched %d modules %v, want %d", len(touched), touched, len(want))
	}
	// Count renders, not just touched modules: exactly the 10 collectors'
	// files and the one item.
	if f, i := m.Renders().Files.Load()-files, m.Renders().Items.Load()-items; f != 10 || i != 1 {
		t.Fatalf("rendered %d files and %d items, want 10 and 1", f, i)
	}
	if got := string(file(m, "m4", "/etc/m4").Value.mustBytes()); !strings.Contains(got, "# m5\nitem 2\n") {
		t.Fatalf("collector m4: %q", got)
	}
	// The same value again renders nothing.
	files = m.Renders().Files.Load()
	m.Put(spec.ConfigBucket, "ace.m5.v", []byte("2"))
	if touched := m.Stabilize(); len(touched) != 0 || m.Renders().Files.Load() != files {
		t.Fatalf("an unchanged value touched %v", touched)
	}
}

// The engine may hand a collection its items out of contributor order (an
// input whose edge was refused comes back last): the text stays ordered.
func TestACollectionOrdersItsItemsWhateverTheOrderOfItsInputs(t *testing.T) {
	g := graph.New()
	var ins []*graph.Node
	for _, c := range []string{"z", "b", "a"} {
		n, _ := g.Input(graph.Key{Kind: KindItem, Name: c + "/c"})
		n.Meta = &Origin{Module: c, Collection: "c"}
		g.Set(n, []byte(c+"-item"))
		ins = append(ins, n)
	}
	reg, _ := g.Input(graph.Key{Kind: KindRegistry, Name: "collected"})
	g.Set(reg, "{}")
	coll, _ := g.Derived(graph.Key{Kind: KindCollection, Name: "c"}, computeCollection(nil), ins...)
	g.MarkTolerant(coll)
	text, _ := g.Derived(graph.Key{Kind: KindNeed, Name: "x/${collected:c}"}, collectedText(";"), reg, coll)
	g.Stabilize()
	if got, want := string(text.Value().([]byte)), "; a\na-item\n; b\nb-item\n; z\nz-item\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestAKindWaitsWhileTheRegistrySaysItLivesElsewhere(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config","owner":"mesh-config","bucket":"other-config","key":"<node>.<module>.<key>"}`))
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{Files: []FileSpec{{Path: "/etc/web", Template: "t"}}}))
	m.SetArchive("web", digestA, map[string][]byte{"t": []byte("${config:model}")})
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus"))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, "lives in bucket other-config; this client reads it from mesh-config_resolved") {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
	// An entry that is not an object (null parsed as one with no fields).
	m.Put(spec.RegistryBucket, "config", []byte(`null`))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, "the registry's entry for kind config is not a JSON object") {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
}

// A plan moving to a new templates archive rebuilds its files; a secret
// the module already holds is not asked again (asked once per run), and
// its value is dropped when the module goes.
func TestASecretIsAskedOncePerRunAcrossANewTemplatesArchive(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	p := Plan{Files: []FileSpec{{Path: "/etc/k", Template: "t"}}, Secrets: []SecretSpec{{Name: "key"}}}
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", p))
	m.SetArchive("app", digestA, map[string][]byte{"t": []byte("k=${secret:key}")})
	if got := m.TakeNewSecrets(); len(got) != 1 || got[0] != "own/app/key" {
		t.Fatalf("asked %v", got)
	}
	m.SetSecret("own/app/key", []byte("s1"), time.Time{})
	m.Stabilize()
	digestB := "sha256:" + strings.Repeat("b", 64)
	p.Templates = TemplatesRef{Ref: "file:///t/app-2.tar", Digest: digestB}
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", p))
	m.Stabilize() // the new archive is not here yet: the file waits on it alone
	m.SetArchive("app", digestB, map[string][]byte{"t": []byte("key=${secret:key}")})
	m.Stabilize()
	if got := m.TakeNewSecrets(); len(got) != 0 {
		t.Fatalf("asked again %v", got)
	}
	if f := file(m, "app", "/etc/k"); f.Value == nil || string(f.Value.mustBytes()) != "key=s1" {
		t.Fatalf("file %+v", f)
	}
	m.Delete(spec.AssignmentsBucket, "ace.app")
	if _, held := m.secrets["own/app/key"]; held {
		t.Fatal("a removed module's secret is still held")
	}
}

// A config value is held by its need leaf while a placeholder reads it and
// by the graph's map otherwise (config.go): across a leaf made, removed and
// made again, the value is answered (ConfigValue, the ask), a change of it
// is a change, and a file that reads it again renders it.
func TestAConfigValueOutlivesTheLeafThatHeldIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("A1"))
	m.Put(spec.ConfigBucket, "ace.web.b", []byte("B1"))
	put := func(tmpl, text string) {
		t.Helper()
		if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
			Files: []FileSpec{{Path: "/etc/web.conf", Template: tmpl}},
		})).Refused; err != nil {
			t.Fatal(err)
		}
		m.SetArchive("web", digestA, map[string][]byte{tmpl: []byte(text)})
		m.Stabilize()
	}
	value := func(key, want string) {
		t.Helper()
		if v, ok := m.ConfigValue("web", key); !ok || string(v) != want {
			t.Fatalf("ConfigValue(web, %s) = %q, %v; want %q", key, v, ok, want)
		}
	}
	content := func(want string) {
		t.Helper()
		if f := file(m, "web", "/etc/web.conf"); f.Value == nil || string(f.Value.mustBytes()) != want {
			t.Fatalf("web.conf %+v, want %q", f, want)
		}
	}
	put("reads-a", "a=${config:a}\n")
	content("a=A1\n")
	value("a", "A1")
	value("b", "B1")
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A1")); c.ConfigKey != "" {
		t.Fatalf("the same value again is a change: %+v", c)
	}
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A2")); c.ConfigKey != "a" {
		t.Fatalf("a new value of a leaf's key is no change: %+v", c)
	}
	m.Stabilize()
	content("a=A2\n")

	put("none", "nothing\n") // the leaf of a goes; its value stays known
	if m.Graph().Node(configNeedKey("web", "a")) != nil {
		t.Fatal("the need of a is still in the graph")
	}
	value("a", "A2")
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A2")); c.ConfigKey != "" {
		t.Fatalf("the same value again, after its leaf went, is a change: %+v", c)
	}
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("A3"))
	put("reads-a-again", "a=${config:a}\n")
	content("a=A3\n")
	value("a", "A3")

	m.Delete(spec.ConfigBucket, "ace.web.a")
	m.Stabilize()
	if _, ok := m.ConfigValue("web", "a"); ok {
		t.Fatal("a deleted key is still answered")
	}
	if f := file(m, "web", "/etc/web.conf"); f.State != graph.Waiting || !strings.Contains(f.Why, "ace.web.a: not written yet") {
		t.Fatalf("web.conf after the delete: %+v", f)
	}
}

// mustBytes is the file's bytes (rendered again when its value has let
// them go); it panics when they cannot be had.
func (f *FileValue) mustBytes() []byte {
	b, err := f.Bytes()
	if err != nil {
		panic(err)
	}
	return b
}

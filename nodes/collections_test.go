package nodes

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

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
	// a's archive is its own (zsh's, digestA, would be shared: one digest, one archive)
	const digestOwn = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "c"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${collected:c}")})
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}},
		Templates: TemplatesRef{Ref: "file:///t/a.tar", Digest: digestOwn}}))
	m.Stabilize()
	v := m.View("a")
	if len(v.Items) != 1 || v.Items[0].State != graph.Waiting || !strings.Contains(v.Items[0].Why, "not fetched yet") {
		t.Fatalf("items %+v", v.Items)
	}
	if got := file(m, "zsh", "/etc/zsh"); got.Value == nil || len(got.Value.mustBytes()) != 0 {
		t.Fatalf("collector %+v", got)
	}
	m.SetArchive("a", digestOwn, map[string][]byte{"i": []byte("")})
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
	m := zshCollectingA()
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

// zshCollectingA is a graph of node ace where module zsh collects c into
// /etc/zsh and module a contributes to c from its template i (its archive
// not set yet).
func zshCollectingA() *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "c"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${collected:c}")})
	m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c", Template: "i"}}}))
	return m
}

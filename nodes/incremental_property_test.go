package nodes

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A propVariant is one plan of a module and its templates.
type propVariant struct {
	plan  Plan
	files map[string][]byte
}

func propDigest(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return fmt.Sprintf("sha256:%064x", h.Sum64())
}

var propGiteaVariants = []propVariant{
	{Plan{Provides: []Offer{{Provision: "forge-account", AnsweredBy: AnsweredByHelper}, {Provision: "gitea-read", Have: map[string]string{"url": "A"}}},
		Files: []FileSpec{{Path: "/etc/gitea/c", Template: "c"}}}, map[string][]byte{"c": []byte("${consumers:gitea-read}")}},
	{Plan{Provides: []Offer{{Provision: "gitea-read"}}, Files: []FileSpec{{Path: "/etc/gitea/c", Template: "c"}}}, map[string][]byte{"c": []byte("${consumers:gitea-read}")}},
	{Plan{Provides: []Offer{{Provision: "gitea-read", AnsweredBy: AnsweredByHelper}}, Files: []FileSpec{{Path: "/etc/gitea/c", Template: "c"}}}, map[string][]byte{"c": []byte("${consumers:gitea-read}")}},
	{Plan{Provides: []Offer{{Provision: "other"}}, Files: []FileSpec{{Path: "/etc/gitea/c", Template: "c"}}}, map[string][]byte{"c": []byte("static")}},
}

func ccPropVariant(local string, k string) propVariant {
	x := "gitea-read"
	if local != "" {
		x += "/" + local
	}
	return propVariant{Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "t", Local: local}},
		Files: []FileSpec{{Path: "/etc/cc", Template: "t"}}}, map[string][]byte{"t": []byte("${bound:" + x + ":" + k + "}")}}
}

var propCcVariants = []propVariant{ccPropVariant("", "url"), ccPropVariant("two", "url"), ccPropVariant("", "as"),
	{Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "t"}, {Provision: "gitea-read", Provider: "gitea", Credential: "t", Local: "two"}}}, nil}}

var propK1Variants = []propVariant{
	{Plan{Collections: []CollectionSpec{{Name: "c1", Comment: "#"}}, Files: []FileSpec{{Path: "/etc/k1", Template: "f"}}, Items: []ItemSpec{{Collection: "c2", Template: "i"}}},
		map[string][]byte{"f": []byte("${collected:c1}"), "i": []byte("k1 says ${collected:c1}")}},
	{Plan{Collections: []CollectionSpec{{Name: "c1", Comment: "//"}}, Files: []FileSpec{{Path: "/etc/k1", Template: "f"}}, Items: []ItemSpec{{Collection: "c2", Template: "i"}}},
		map[string][]byte{"f": []byte("${collected:c1}"), "i": []byte("k1 plain")}},
	{Plan{Collections: []CollectionSpec{{Name: "c1", Comment: "#"}, {Name: "c2", Comment: ";"}}, Files: []FileSpec{{Path: "/etc/k1", Template: "f"}}},
		map[string][]byte{"f": []byte("${collected:c1}|${collected:c2}")}},
}
var propK2Variants = []propVariant{
	{Plan{Collections: []CollectionSpec{{Name: "c2", Comment: ";"}}, Files: []FileSpec{{Path: "/etc/k2", Template: "f"}}, Items: []ItemSpec{{Collection: "c1", Template: "i"}}},
		map[string][]byte{"f": []byte("${collected:c2}"), "i": []byte("k2 says ${collected:c2}")}},
	{Plan{Collections: []CollectionSpec{{Name: "c2", Comment: ";"}}, Files: []FileSpec{{Path: "/etc/k2", Template: "f"}}, Items: []ItemSpec{{Collection: "c1", Template: "i"}}},
		map[string][]byte{"f": []byte("${collected:c2}"), "i": []byte("k2 plain")}},
}
var propZVariants = []propVariant{
	{Plan{Items: []ItemSpec{{Collection: "c1", Template: "i"}}}, map[string][]byte{"i": []byte("z1")}},
	{Plan{Items: []ItemSpec{{Collection: "c2", Template: "i"}}}, map[string][]byte{"i": []byte("z2\n")}},
}

type propSlot struct {
	key      string
	variants []propVariant
}

var propSlots = []propSlot{
	{"ace.gitea", propGiteaVariants}, {"zed.gitea", propGiteaVariants}, {"ace.cc", propCcVariants}, {"g14.cc", propCcVariants},
	{"ace.k1", propK1Variants}, {"ace.k2", propK2Variants}, {"ace.z", propZVariants}, {"ace.y", propZVariants},
}

var propBoundKeys = []string{"ace.cc.gitea-read", "ace.cc.gitea-read.two"}
var propBoundVals = []string{`{"state":"bound","values":{"url":"E1"}}`, `{"state":"bound","values":{"url":"E2","as":"S"}}`, `{"state":"refused","reason":"no"}`}
var propPairNames = []string{"pair/gitea/gitea-read/ace/cc", "pair/gitea/gitea-read/ace/cc/two", "pair/gitea/gitea-read/g14/cc", "pair/gitea/gitea-read/g14/cc/two"}

type propWorld struct {
	asg     map[int]int // propSlot index → propVariant
	bound   map[string]int
	secrets map[string]string
}

func propVariantOf(w *propWorld, si int) (propVariant, string) {
	s := propSlots[si]
	v := w.asg[si]
	mod := strings.SplitN(s.key, ".", 2)[1]
	return s.variants[v], propDigest(fmt.Sprintf("%s/%d", mod, v))
}

func putPropSlot(m *NodeGraph, w *propWorld, si int) {
	if w.asg[si] == -2 { // another domain's value: no provisioning
		m.Put(spec.AssignmentsBucket, propSlots[si].key, []byte(`{"runs":"elsewhere"}`))
		return
	}
	if w.asg[si] == -3 { // a plan refused for a rule (it parses: it still binds and offers)
		toks := strings.SplitN(propSlots[si].key, ".", 2)
		p := propSlots[si].variants[0].plan
		p.Templates = TemplatesRef{Ref: "file:///t/x.tar", Digest: propDigest("bad")}
		p.Files = append(append([]FileSpec(nil), p.Files...), FileSpec{Path: "/etc/bad", Template: "b", Mode: "bogus"})
		m.Put(spec.AssignmentsBucket, propSlots[si].key, planJSON(toks[0], toks[1], p))
		m.TakeNewArchives()
		return
	}
	v, d := propVariantOf(w, si)
	toks := strings.SplitN(propSlots[si].key, ".", 2)
	p := v.plan
	p.Templates = TemplatesRef{Ref: "file:///t/x.tar", Digest: d}
	m.Put(spec.AssignmentsBucket, propSlots[si].key, planJSON(toks[0], toks[1], p))
	for _, a := range m.TakeNewArchives() {
		if a.Digest == d {
			m.SetArchive(a.Module, d, v.files)
		}
	}
}

func answerVault(m *NodeGraph, w *propWorld, names []string) {
	for _, n := range names {
		if v, ok := w.secrets[n]; ok {
			m.SetSecret(n, []byte(v), time.Time{})
		} else {
			m.SecretAbsent(n, "absent", time.Time{})
		}
	}
}

func graphSnapshot(m *NodeGraph) string {
	var b strings.Builder
	for _, mod := range m.Modules() {
		v := m.View(mod)
		fmt.Fprintf(&b, "%s %v %q\n", mod, v.State, v.Reason)
		for _, f := range v.Files {
			fmt.Fprintf(&b, "  file %s %v %q", f.Path, f.State, f.Why)
			if f.Value != nil {
				fmt.Fprintf(&b, " %q", f.Value.mustBytes())
			}
			b.WriteString("\n")
		}
		for _, n := range v.Needs {
			fmt.Fprintf(&b, "  need %s %s %v %q %v\n", n.Kind, n.Name, n.State, n.Why, n.Declared)
		}
		fmt.Fprintf(&b, "  unknown %v\n", v.NeedsUnknown)
		for _, it := range v.Items {
			fmt.Fprintf(&b, "  item %s %v %q %q\n", it.Collection, it.State, it.Why, it.Text)
		}
	}
	return b.String()
}

// freshGraph is a client started on w, the collect bucket holding before
// (module → collection → text: what the last run recorded).
func freshGraph(w *propWorld, before map[string]map[string][]byte) *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	var sis []int
	for si := range w.asg {
		sis = append(sis, si)
	}
	sort.Ints(sis)
	for _, si := range sis {
		putPropSlot(m, w, si)
	}
	m.ItemsBefore(before)
	for k, v := range w.bound {
		m.Put("gitea_bound", k, []byte(propBoundVals[v]))
	}
	answerVault(m, w, m.TakeNewSecrets())
	m.Stabilize()
	answerVault(m, w, m.TakeNewSecrets())
	m.Stabilize()
	return m
}

// SPEC §1: a change recomputes only what depends on it, and what it
// recomputes is what computing from scratch gives. A random run of plans
// put, changed, refused, made another domain's and deleted (providers on
// this node and another, consumers with and without a local, collectors
// whose items name each other's collections, cycles made and broken),
// bound entries written and refused, and consumers' credentials set and
// taken away, leaves every module, file, need and item as a client
// started on the final inputs sees them (states, reasons and bytes).
func TestIncrementalEqualsFreshForBindingsOffersAndCollections(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := &propWorld{asg: map[int]int{}, bound: map[string]int{}, secrets: map[string]string{}}
		m := NewNodeGraph("ace")
		registryAll(m)
		var log []string
		for step := 0; step < 30; step++ {
			switch rapid.IntRange(0, 5).Draw(rt, "op") {
			case 0, 1, 2:
				si := rapid.IntRange(0, len(propSlots)-1).Draw(rt, "propSlot")
				v := rapid.IntRange(-3, len(propSlots[si].variants)-1).Draw(rt, "propVariant")
				if v == -1 {
					delete(w.asg, si)
					m.Delete(spec.AssignmentsBucket, propSlots[si].key)
					log = append(log, "del "+propSlots[si].key)
				} else {
					w.asg[si] = v
					putPropSlot(m, w, si)
					log = append(log, fmt.Sprintf("put %s %d", propSlots[si].key, v))
				}
			case 3, 4:
				k := propBoundKeys[rapid.IntRange(0, len(propBoundKeys)-1).Draw(rt, "bk")]
				v := rapid.IntRange(-1, len(propBoundVals)-1).Draw(rt, "bv")
				if v < 0 {
					delete(w.bound, k)
					m.Delete("gitea_bound", k)
				} else {
					w.bound[k] = v
					m.Put("gitea_bound", k, []byte(propBoundVals[v]))
				}
				log = append(log, fmt.Sprintf("bound %s %d", k, v))
			case 5:
				n := propPairNames[rapid.IntRange(0, len(propPairNames)-1).Draw(rt, "pn")]
				v := rapid.IntRange(-1, 2).Draw(rt, "sv")
				if v < 0 {
					delete(w.secrets, n)
				} else {
					w.secrets[n] = fmt.Sprintf("s%d", v)
				}
				// As the daemon takes the vault's secret-changed: asked
				// again when read, forgotten when only held (a provider's
				// plan refused meanwhile), so it is asked anew when read again.
				if m.WantsSecret(n) {
					answerVault(m, w, []string{n})
				} else {
					m.ForgetSecret(n)
				}
				log = append(log, fmt.Sprintf("secret %s %d", n, v))
			}
			answerVault(m, w, m.TakeNewSecrets())
			m.Stabilize()
			answerVault(m, w, m.TakeNewSecrets())
			m.Stabilize()
			got, want := graphSnapshot(m), graphSnapshot(freshGraph(w, heldItems(m)))
			if got != want {
				rt.Fatalf("after %v\nincremental:\n%s\nfresh:\n%s", log, got, want)
			}
		}
	})
}

// heldItems is what the collect bucket holds of the modules m fails for a
// refused plan: the items they hold as last recorded (holdItems), which a
// client started afresh reads back (ItemsBefore). The rest of the bucket
// is what the graph computes, from scratch as incrementally.
func heldItems(m *NodeGraph) map[string]map[string][]byte {
	out := map[string]map[string][]byte{}
	for n, text := range m.itemsKept {
		o := n.Meta.(*Origin)
		if mod := m.mods[o.Module]; n.Removed() || mod == nil || mod.asg != nil {
			continue
		}
		if out[o.Module] == nil {
			out[o.Module] = map[string][]byte{}
		}
		out[o.Module][o.Collection] = text
	}
	return out
}

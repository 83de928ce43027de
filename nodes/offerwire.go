package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A binding ${bound:X[/L]:K} to provider P reads, besides the registry, the
// offer node offer:P/X (how X is judged, SPEC §4.6), which reads the leaf
// offers:P (P's provides, from P's plan in the assignments bucket: the first
// key in byte order when P is assigned on several nodes). It reads the entry
// leaf of <P>_bound only when the judgement says the entry decides: a
// binding judged by its have neither reads nor waits for an entry, and its
// bucket is not watched for it. When P's offers change the mesh rewires the
// needs whose judgement moved; the others recompute at most up to their
// offer node (cutoff).

// offersAt is what one assignment of a provider module offers.
type offersAt struct {
	provides []Offer
	err      string // the plan's provides do not parse or break a rule
}

// parseOffers reads an assignment's provides[] (any node's) and checks it.
func parseOffers(data []byte) ([]Offer, error) {
	var a struct {
		Provisioning struct {
			Provides []Offer `json:"provides"`
		} `json:"provisioning"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %w", errUnparsed, err)
	}
	if msg := checkProvides(a.Provisioning.Provides); msg != "" {
		return nil, fmt.Errorf("%s", msg)
	}
	return a.Provisioning.Provides, nil
}

// noteOffers records what assignment key (of module) offers, or why its
// offers cannot be read (err). Only the first key in byte order offers
// (offersOf): a put that leaves the first key and what it offers as they
// were judges nothing again. A provider assigned on every node of a big
// mesh (an agent) had its keys sorted and its offers judged again at each
// of its plans' changes on any node, and at each of them read again after
// a reconnect: quadratic (BenchmarkBigMeshNodeGraph).
func (m *NodeGraph) noteOffers(key, module string, provides []Offer, err string) {
	if m.offerKeys[module] == nil {
		m.offerKeys[module] = map[string]offersAt{}
	}
	firstBefore, before := m.offersOf(module)
	at := offersAt{provides: provides, err: err}
	m.offerKeys[module][key] = at
	if first := m.offerFirst[module]; first == "" || key < first {
		m.offerFirst[module] = key
	}
	if first, now := m.offersOf(module); first == firstBefore && before.same(now) {
		return
	}
	m.refreshOffers(module)
}

// noteOffersIn records what the assignment at key (of module), whose plan
// is refused, offers: its provides[] when they parse and keep their rules,
// whatever else of the plan is refused and on whatever node it is (a
// consumer's binding is judged alike on every node, SPEC §4.6 r2); its last
// offers when the value does not parse (keepBindings); else why not.
func (m *NodeGraph) noteOffersIn(key, module string, data []byte) {
	switch provides, err := parseOffers(data); {
	case err == nil:
		m.noteOffers(key, module, provides, "")
	case errors.Is(err, errUnparsed) && m.offered(key, module):
		// keepBindings: its consumers are judged by its last offers
	default:
		m.noteOffers(key, module, nil, err.Error())
	}
}

// forgetOffers records that assignment key (of module) is gone.
func (m *NodeGraph) forgetOffers(key, module string) {
	if _, ok := m.offerKeys[module][key]; !ok {
		return
	}
	delete(m.offerKeys[module], key)
	switch {
	case len(m.offerKeys[module]) == 0:
		delete(m.offerKeys, module)
		delete(m.offerFirst, module)
	case m.offerFirst[module] == key:
		m.offerFirst[module] = minKey(m.offerKeys[module])
	default:
		return // not the first key: what offers is as it was
	}
	m.refreshOffers(module)
}

// minKey is the first of keys in byte order.
func minKey(keys map[string]offersAt) string {
	first := ""
	for k := range keys {
		if first == "" || k < first {
			first = k
		}
	}
	return first
}

// same says whether two assignments offer alike.
func (a offersAt) same(b offersAt) bool {
	return a.err == b.err && slices.EqualFunc(a.provides, b.provides, func(x, y Offer) bool {
		return x.Provision == y.Provision && x.AnsweredBy == y.AnsweredBy &&
			(x.Have == nil) == (y.Have == nil) && maps.Equal(x.Have, y.Have)
	})
}

// offersOf is provider's plan that offers are read from: its first key in
// byte order ("" when it is assigned nowhere), kept in offerFirst.
func (m *NodeGraph) offersOf(provider string) (string, offersAt) {
	key := m.offerFirst[provider]
	if key == "" {
		return "", offersAt{}
	}
	return key, m.offerKeys[provider][key]
}

// ruleOf is how a binding to provider's offer x is judged now.
func (m *NodeGraph) ruleOf(provider, x string) Judgement {
	key, at := m.offersOf(provider)
	if key == "" || at.err != "" {
		return Judgement{Rule: RuleUnknown}
	}
	return Judge(at.provides, x)
}

func (m *NodeGraph) offersLeaf(provider string) *graph.Node {
	return m.leaf(KindOffers, provider, &Origin{Bucket: spec.AssignmentsBucket}, func(n *graph.Node) {
		m.initOffers(n, provider)
	})
}

func (m *NodeGraph) initOffers(n *graph.Node, provider string) {
	key, at := m.offersOf(provider)
	n.Meta.(*Origin).Key = key
	switch {
	case key == "":
		m.g.SetWaiting(n, "provider "+provider+" is assigned nowhere yet")
	case at.err != "":
		m.g.SetWaiting(n, "provider "+provider+"'s plan ("+spec.AssignmentsBucket+" "+key+") is refused: "+at.err)
	default:
		m.g.Set(n, at.provides)
	}
}

// offerNode is how a binding to provider's offer x is judged.
func (m *NodeGraph) offerNode(provider, x string) *graph.Node {
	k := graph.Key{Kind: KindOffer, Name: provider + "/" + x}
	if n := m.g.Node(k); n != nil {
		return n
	}
	n, _ := m.g.Derived(k, computeOffer(provider, x), m.offersLeaf(provider))
	key, _ := m.offersOf(provider)
	n.Meta = &Origin{Bucket: spec.AssignmentsBucket, Key: key, Rule: ruleText(m.ruleOf(provider, x).Rule, provider, x, key != "")}
	return n
}

// computeOffer: [offers of provider] → the Judgement of offer x; a
// provision provider does not offer fails.
func computeOffer(provider, x string) graph.Compute {
	return func(in graph.In) (any, error) {
		provides, _ := in.Value(0).([]Offer)
		j := Judge(provides, x)
		if j.Rule == RuleNotOffered {
			return nil, fmt.Errorf("%s does not offer %s", provider, x)
		}
		return j, nil
	}
}

// boundInputs are the inputs of the need of ${bound:X[/L]:…} of mod with
// provisions entry pr: the offer node, and the entry leaf when the
// judgement reads it.
func (m *NodeGraph) boundInputs(mod string, pr ProvisionSpec, l string) []*graph.Node {
	out := []*graph.Node{m.offerNode(pr.Provider, pr.Provision)}
	if m.ruleOf(pr.Provider, pr.Provision).Rule.ReadsEntry() {
		out = append(out, m.boundLeaf(mod, spec.BoundBucket(pr.Provider), spec.BoundKey(m.node, mod, pr.Provision, l)))
	}
	return out
}

// refreshOffers sets provider's offers leaf anew and rewires the bindings
// whose judgement moved between reading the entry and not.
func (m *NodeGraph) refreshOffers(provider string) {
	n := m.existing(KindOffers, provider)
	if n == nil {
		return
	}
	m.initOffers(n, provider)
	key, _ := m.offersOf(provider)
	var gone []*graph.Node
	for _, off := range append([]*graph.Node(nil), n.Dependents()...) {
		x := strings.TrimPrefix(off.Key().Name, provider+"/")
		j := m.ruleOf(provider, x)
		if o, ok := off.Meta.(*Origin); ok {
			o.Rule, o.Key = ruleText(j.Rule, provider, x, key != ""), key
		}
		for _, need := range append([]*graph.Node(nil), off.Dependents()...) {
			gone = append(gone, m.rewireBound(need, j.Rule)...)
		}
	}
	m.collect(gone)
}

// rewireBound gives a bound need its entry leaf, or takes it away, as rule
// says; it returns the inputs dropped.
func (m *NodeGraph) rewireBound(need *graph.Node, rule Rule) []*graph.Node {
	mod, ok := need.Meta.(*module)
	if !ok || mod.asg == nil {
		return nil
	}
	in := need.Inputs()
	if (len(in) == 3) == rule.ReadsEntry() {
		return nil
	}
	head := append([]*graph.Node(nil), in[:2]...)
	if !rule.ReadsEntry() {
		_ = m.g.SetInputs(need, head...)
		return in[2:]
	}
	name := strings.TrimSuffix(strings.TrimPrefix(need.Key().Name[len(mod.name)+1:], "${"+string(spec.Bound)+":"), "}")
	x, l, _, err := ParseBoundName(name)
	if err != nil {
		return nil
	}
	pr, _ := mod.asg.Provisioning.ProvisionFor(x, l)
	leaf := m.boundLeaf(mod.name, spec.BoundBucket(pr.Provider), spec.BoundKey(m.node, mod.name, x, l))
	_ = m.g.SetInputs(need, append(head, leaf)...)
	return nil
}

// boundValue: [registry entry, offer's judgement, entry values?] →
// the value of key k: from the offer's have, or from the entry.
func boundValue(provider, x, k string) graph.Compute {
	return func(in graph.In) (any, error) {
		j, _ := in.Value(1).(Judgement)
		if j.Rule == RuleHave {
			v, ok := j.Have[k]
			if !ok {
				return nil, fmt.Errorf("%s's offer %s has no %s", provider, x, k)
			}
			return []byte(v), nil
		}
		if in.Len() < 3 {
			return nil, graph.Wait("%s's offer %s: its entry is not read yet", provider, x)
		}
		vals, _ := in.Value(2).(map[string]string)
		v, ok := vals[k]
		if !ok {
			o, _ := in.Input(2).Meta.(*Origin)
			where := in.Key(2).Name
			if o != nil {
				where = o.Bucket + " " + o.Key
			}
			return nil, graph.Wait("%s: bound, but has no value %q yet", where, k)
		}
		return []byte(v), nil
	}
}

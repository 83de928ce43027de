package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// module is one of this node's modules and the nodes made for it.
type module struct {
	name    string
	key     string
	asg     *Assignment // nil when the plan does not parse or breaks a rule
	planErr string
	// unparsed: its value does not parse (PlanError.Unparsed), so its
	// items are held as they were (holdItems); itemsBefore is what the
	// last run recorded of them, handed over at start (ItemsBefore) and
	// taken by the next rebuild.
	unparsed    bool
	itemsBefore map[string][]byte
	// planVal is planValue's answer for planOf, kept: every View asks for
	// it, and it JSON-encodes and hashes the whole plan (3.4 % of a
	// change's CPU at 10k files, issue 20). An assignment is never changed
	// in place: a new one is a new pointer.
	planVal string
	planOf  *Assignment

	plan *graph.Node
	node *graph.Node
	// needs are the module's need nodes by kind then name, as View lists
	// them: sorted once per rebuild (a change of one value views its module
	// again, and a module may have hundreds of needs).
	needs []*graph.Node
	// namesSum is the sum of the needs' kinds and names for namesSeed
	// (NeedsSum), kept until the next rebuild (namesOK).
	namesSum  uint64
	namesSeed maphash.Seed
	namesOK   bool
	// declaredOnly are the need nodes of secrets the plan declares that no
	// template names (wireDeclaredSecrets): asked and waited for (SPEC
	// §4.2), listed in the report's waiting and by explain, but not written
	// to the needs bucket, whose needs are placeholders (§4.1, §5.2).
	declaredOnly []*graph.Node
	// needsUnknown: which placeholders its templates hold is not known
	// (they are not read, or the plan failed before they were wired):
	// ModuleView.NeedsUnknown.
	needsUnknown bool
	// failedNeeds: the placeholders its plan makes impossible, when they
	// fail it (ModuleView.FailedNeeds).
	failedNeeds []NeedView
	// namedNeeds: with failedNeeds, every placeholder its templates
	// name, when each was read (ModuleView.NamedNeeds).
	namedNeeds map[Placeholder]bool
	// wiring finds a placeholder's need node while rebuild runs; nil
	// otherwise (a map per module, kept, cost more than its needs).
	wiring map[Placeholder]*graph.Node
	files  []*graph.Node
	items  []*graph.Node
	// owned are the nodes its last rebuild made or kept (a slice: a map
	// per module cost ~25 bytes a node); owning is the same set while
	// rebuild runs, nil otherwise.
	owned  []*graph.Node
	owning map[*graph.Node]bool
}

// putAssignment records mesh-controller_assignments <key> = data (key is
// node.name), for any node. One of this node's builds or updates that
// module; one that does not parse or breaks a rule fails that module alone.
// Another node's plan is read only for the consumers it binds.
func (m *NodeGraph) putAssignment(key, node, name string, data []byte) error {
	if node != m.node {
		// Another node's plan is read only for the consumers it binds
		// and the offers it makes.
		asg, err := parseBindings(node, name, data)
		m.noteUnparsed(key, node, name, errors.Is(err, errUnparsed)) // the last run's kept bindings, at start
		if !errors.Is(err, errUnparsed) {
			m.index(key, asg)
		} // else the bindings of its last value that parsed stay (keepBindings)
		switch {
		case errors.Is(err, ErrNoPlan):
			m.forgetOffers(key, name) // not the provisioner's: offers nothing, assigns nothing
		case asg != nil:
			m.noteOffers(key, name, asg.Provisioning.Provides, checkProvides(asg.Provisioning.Provides))
		default: // refused for what it requires (a name no vault name holds): it still offers
			m.noteOffersIn(key, name, data)
		}
		return err
	}
	asg, perr := ParseAssignment(key, data)
	bind, keep := asg, false
	if asg == nil && !errors.Is(perr, ErrNoPlan) {
		// A plan refused for another reason still binds its consumers,
		// as it does read from any other node: whether a consumer is
		// listed does not hang on which node its plan is on.
		var berr error
		bind, berr = parseBindings(node, name, data)
		keep = errors.Is(berr, errUnparsed)
	}
	m.noteUnparsed(key, node, name, keep) // the last run's kept bindings, at start
	if !keep {
		m.index(key, bind)
	} // else the bindings of its last value that parsed stay (keepBindings)
	switch {
	case errors.Is(perr, ErrNoPlan):
		m.forgetOffers(key, name)
	case asg != nil:
		m.noteOffers(key, name, asg.Provisioning.Provides, "")
	default:
		m.noteOffersIn(key, name, data) // a plan refused for another reason still offers
	}
	mod := m.mods[name]
	if errors.Is(perr, ErrNoPlan) {
		// Not the provisioner's (SPEC §3 r2): not a module; one that was
		// goes as if its key were deleted.
		if mod != nil {
			m.removeModule(mod)
		}
		return perr
	}
	if mod == nil {
		mod = &module{name: name, key: key}
		m.mods[name] = mod
	}
	oldDigest, oldRef := "", ""
	if mod.asg != nil {
		oldDigest, oldRef = mod.asg.Provisioning.Templates.Digest, mod.asg.Provisioning.Templates.Ref
	}
	m.formsMoved(name, mod.asg, asg)
	m.nameDigest(mod.asg, -1)
	m.nameDigest(asg, +1)
	mod.asg, mod.planErr, mod.unparsed = asg, "", false
	if pe := (*PlanError)(nil); errors.As(perr, &pe) {
		mod.unparsed = pe.Unparsed
	}
	if perr != nil {
		mod.planErr = perr.Error()
	}
	if asg != nil {
		t := asg.Provisioning.Templates
		used := len(asg.Provisioning.Files)+len(asg.Provisioning.Items) > 0
		switch held, ok := m.archives[name]; {
		case ok && held.state == graph.Ready && held.digest == t.Digest:
			// Its archive is here as this plan names it (a plan refused
			// meanwhile kept it): nothing to fetch, nothing to wait for.
		case t.Digest != oldDigest && m.shareArchive(name, t.Digest):
			defer m.pruneParsed()
			// Another module holds it (one archive, several modules):
			// SPEC §3, a second plan naming the same digest fetches nothing.
			// Without it the module reported waiting "not fetched yet" for
			// the moments the cache took to answer (an outside audit saw
			// applied → waiting → applied for a plan fixed).
		case t.Digest != oldDigest:
			delete(m.archives, name)
			defer m.pruneParsed()
			if used {
				m.newArchives = append(m.newArchives, ArchiveWant{Module: name, Ref: t.Ref, Digest: t.Digest})
				if oldDigest != "" {
					m.archiveMoved(name) // held while it is fetched (archiveheld.go)
				}
			}
		case t.Ref != oldRef && used && (!ok || held.state != graph.Ready):
			// The same archive, not got yet, now looked for elsewhere: from
			// there (the fetch from the old ref stops: WantsArchive).
			m.newArchives = append(m.newArchives, ArchiveWant{Module: name, Ref: t.Ref, Digest: t.Digest})
		}
	}
	m.rebuild(mod)
	return perr
}

// index keeps, for every provider/provision, the assignments whose plans
// bind a consumer to it, and refreshes the consumers lists that moved. A
// provider/provision the key's old and new plans bind alike (the same
// entries, locals in the same order) did not move: another node's plan
// changing what binds nothing here (a placement, a file) rebuilt the whole
// list of every provider it names, each consumer's key sorted and its
// vault leaf looked up, and a mesh read again after a reconnect did so for
// every consumer (quadratic: 20 s of CPU at 50,000 assignments,
// BenchmarkBigMeshNodeGraph).
func (m *NodeGraph) index(key string, asg *Assignment) {
	held := holdBinds(asg)
	var oldBinds, newBinds map[string][]string // provider/provision → the entries' locals, in order
	old := m.assignments[key]
	if old != nil {
		oldBinds = bindsOf(old)
		for pk := range oldBinds {
			delete(m.bindings[pk], key)
			if len(m.bindings[pk]) == 0 {
				delete(m.bindings, pk) // bound again below if asg still names it
			}
		}
	}
	if held == nil {
		delete(m.assignments, key)
	} else {
		m.assignments[key] = held
		newBinds = bindsOf(held)
		for pk := range newBinds {
			if m.bindings[pk] == nil {
				m.bindings[pk] = map[string]bool{}
			}
			m.bindings[pk][key] = true
		}
	}
	for pk, locals := range oldBinds {
		if nw, ok := newBinds[pk]; !ok || !slices.Equal(locals, nw) {
			m.consumersMoved(pk)
		}
	}
	for pk := range newBinds {
		if _, ok := oldBinds[pk]; !ok {
			m.consumersMoved(pk)
		}
	}
	if old != nil {
		m.dropUnbound(old, oldBinds, newBinds)
	}
}

// consumersMoved notes that provider/provision pk's consumers moved: its
// list, when one is read here, is built again once, by the next
// flushConsumers. Built at each binding, a batch of them (a consumer
// module rolled out to every node of a big mesh, read in one batch) built
// the whole list once per consumer: quadratic, 6.6 s for 2,000 consumers
// (BenchmarkBigMeshNodeGraph rollout), for one render.
func (m *NodeGraph) consumersMoved(pk string) {
	if m.existing(KindBindings, pk) == nil {
		return // no list of it is read here; one made later is built then
	}
	if m.consumersDirty == nil {
		m.consumersDirty = map[string]bool{}
	}
	m.consumersDirty[pk] = true
}

// flushConsumers builds again the consumers lists that moved since it
// last ran. Stabilize runs it first, and what reads or sets the vault
// leaves (TakeNewSecrets, WantsSecret, setSecret), so that the credentials
// of consumers bound in a batch are asked in that batch and taken when
// they come.
func (m *NodeGraph) flushConsumers() {
	if len(m.consumersDirty) == 0 {
		return
	}
	for _, pk := range sortedKeys(m.consumersDirty) {
		if m.existing(KindBindings, pk) != nil {
			m.refreshConsumers(pk)
		}
	}
	m.consumersDirty = nil
}

// bindsOf is what a plan binds: for each provider/provision its entries
// name, the entries' locals in order (nil for a plan that binds nothing).
func bindsOf(a *heldBinds) map[string][]string {
	out := make(map[string][]string, len(a.binds))
	for _, p := range a.binds {
		pk := p.provider + "/" + p.provision
		out[pk] = append(out[pk], p.local)
	}
	return out
}

// bindingsOf lists the consumers bound to provider/provision: in the order
// of the assignments' keys and, within a plan, of its provisions entries.
// A plan listing the same entry twice (its own node refuses it, but a
// refused plan still binds) is one binding, listed once at its first
// entry: both would carry the same credential, and a provider's program
// reading the list met one consumer twice (two accounts of one name).
func (m *NodeGraph) bindingsOf(pk string) []Binding {
	keys := make([]string, 0, len(m.bindings[pk]))
	for k := range m.bindings[pk] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Binding
	for _, k := range keys {
		a := m.assignments[k]
		var locals map[string]bool // this plan's, made at its second entry for pk
		first := len(out)
		for _, p := range a.binds {
			if !p.is(pk) {
				continue
			}
			if len(out) > first {
				if locals == nil {
					locals = map[string]bool{out[first].Local: true}
				}
				if locals[p.local] {
					continue
				}
				locals[p.local] = true
			}
			out = append(out, Binding{Consumer: a.node, Module: a.module, Local: p.local,
				Credential: spec.PairSecretName(p.provider, p.provision, a.node, a.module, p.local)})
		}
	}
	return out
}

// consumersNode is provider/provision's consumers list: it reads the
// bindings and the vault leaf of each binding's credential.
func (m *NodeGraph) consumersNode(provider, provision string) *graph.Node {
	pk := provider + "/" + provision
	if n := m.existing(KindConsumers, pk); n != nil {
		return n
	}
	b := m.leaf(KindBindings, pk, &Origin{Bucket: spec.AssignmentsBucket}, func(*graph.Node) {})
	n, _ := m.g.Derived(graph.Key{Kind: KindConsumers, Name: pk}, m.computeConsumers, b)
	m.g.MarkTolerant(n)
	m.g.MarkSecret(n)
	n.Meta = &Origin{Placeholder: "${consumers:" + provision + "}"}
	m.refreshConsumers(pk)
	return n
}

func (m *NodeGraph) refreshConsumers(pk string) {
	b := m.existing(KindBindings, pk)
	c := m.existing(KindConsumers, pk)
	list := m.bindingsOf(pk)
	m.g.Set(b, list)
	if c == nil {
		return
	}
	old := append([]*graph.Node(nil), c.Inputs()...)
	inputs := []*graph.Node{b}
	for _, bd := range list {
		inputs = append(inputs, m.vaultLeaf(bd.Credential))
	}
	_ = m.g.SetInputs(c, inputs...)
	m.collect(old)
}

// errUnparsed is parseBindings' answer to a value that does not parse as
// an assignment (not JSON, or a field of the wrong type).
//
// keepBindings: such a value leaves the bindings of the key's last value
// that parsed as they were. SPEC §3 fails the module whose plan does not
// parse and leaves "the other modules untouched"; dropping its consumer
// from a provider's ${consumers:X} rewrote the provider's file and
// restarted its program without the consumer's credential, so one typo in
// a consumer's plan cut its running program off at the provider; and so
// do a provider's offers, which the bindings of its consumers are judged
// by (they went waiting, "the provider's plan is refused"). A value
// that parses (a plan refused for a rule, or none) binds as it says, and a
// key deleted unbinds. A client started again on a value that does not
// parse binds and offers as the last run kept (keptplans.go); one that
// never read a value of the key that parsed binds nothing.
var errUnparsed = errors.New("plan does not parse")

// offered says whether assignment key (of module) last offered what a
// plan that parsed said: a value that does not parse leaves it so
// (keepBindings), a provider's typo holding no consumer back.
func (m *NodeGraph) offered(key, module string) bool {
	at, ok := m.offerKeys[module][key]
	return ok && at.err == ""
}

// parseBindings reads of another node's plan only what binds a consumer to
// a provider: its provisions entries, and its provides (their rules are
// checked apart: an offer breaking one leaves the plan's consumers bound;
// one that does not parse, like any JSON error, binds nothing).
func parseBindings(node, module string, data []byte) (*Assignment, error) {
	var a struct {
		Provisioning *struct {
			Provisions []ProvisionSpec `json:"provisions"`
			Provides   []Offer         `json:"provides"`
		} `json:"provisioning"`
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' && json.Valid(t) {
		return nil, ErrNoPlan // JSON that is not an object carries no plan, as ParseAssignment says
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("module %q on node %q: %w: %w", module, node, errUnparsed, err)
	}
	if a.Provisioning == nil {
		if spec.NamesAPlan(data) { // a plan, then a null under its name: not "no plan" (ParseAssignment)
			return nil, fmt.Errorf("module %q on node %q: %w: \"provisioning\" is a plan and then null", module, node, errUnparsed)
		}
		return nil, ErrNoPlan
	}
	bad := checkKeyNames(node, module)
	for i, p := range a.Provisioning.Provisions {
		if bad != "" {
			break
		}
		for _, x := range [][2]string{{"provider", p.Provider}, {"provision", p.Provision}} {
			if msg := spec.CheckNameLen(x[0], x[1]); msg != "" || strings.Contains(x[1], "/") {
				bad = fmt.Sprintf("provisions[%d]: %s %.40q does not fit a vault name", i, x[0], x[1])
			}
		}
		if msg := checkVaultName(p.Local); p.Local != "" && msg != "" {
			bad = fmt.Sprintf("provisions[%d]: local %s", i, msg)
		}
	}
	if bad != "" {
		// Its own node refuses it too; no consumer is bound by a name the
		// vault cannot read one way only.
		return nil, fmt.Errorf("module %q on node %q: %s", module, node, bad)
	}
	return &Assignment{Node: node, Module: module,
		Provisioning: Plan{Provisions: a.Provisioning.Provisions, Provides: a.Provisioning.Provides}}, nil
}

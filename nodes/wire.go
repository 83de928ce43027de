package nodes

import (
	"slices"
	"sort"
	"strings"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// rebuild makes (or remakes) a module's part of the graph from its plan and
// templates. Nodes whose key stays are rewired in place, so a plan change
// that leaves a file's bytes alone sends nothing; nodes no longer named are
// removed, and inputs nobody reads any more go with them.
func (m *NodeGraph) rebuild(mod *module) {
	old := mod.owned
	oldItems := mod.items
	mod.owning = map[*graph.Node]bool{}
	mod.wiring = map[Placeholder]*graph.Node{}
	defer func() { mod.needs, mod.wiring, mod.namesOK = sortNeeds(mod.name, mod.wiring), nil, false }()
	mod.files, mod.items, mod.declaredOnly = nil, nil, nil

	mod.plan = m.leaf(KindPlan, mod.name, &Origin{Module: mod.name, Bucket: spec.AssignmentsBucket, Key: mod.key}, func(*graph.Node) {})
	mod.owning[mod.plan] = true
	var reasons []string
	var archive *graph.Node
	var tmpls map[string]*Template
	var declared []*graph.Node
	faults := placeholderFaults{}  // the placeholders the plan makes impossible
	var named map[Placeholder]bool // every placeholder its templates name, when each is read (parseTemplates)
	if mod.asg == nil {
		reasons = append(reasons, mod.planErr)
	} else if p := &mod.asg.Provisioning; len(p.Files)+len(p.Items) > 0 {
		archive = m.archiveLeaf(mod)
		mod.owning[archive] = true
		if a := m.archives[mod.name]; a.state == graph.Ready && a.digest == p.Templates.Digest {
			tmpls, named, reasons = m.parseTemplates(p, a.members, faults)
		}
	}
	if mod.asg != nil && len(reasons) == 0 && (archive == nil || tmpls != nil) {
		reasons = m.checkPlaceholders(mod, tmpls, faults)
	}
	reasons = append(reasons, m.claim(mod)...)
	if len(reasons) > 0 {
		m.g.SetFailed(mod.plan, strings.Join(reasons, "; "))
		m.holdItems(mod, oldItems) // what it contributed stands while it fails (helditems.go)
	} else {
		m.g.Set(mod.plan, m.planValue(mod))
		if archive == nil || tmpls != nil {
			m.wireFiles(mod, archive, tmpls)
			declared = m.wireDeclaredSecrets(mod)
		} else {
			m.wireWaitingFiles(mod, archive)
		}
	}
	// Its needs are known only once its files are wired: with the
	// templates not read (the archive waits or cannot be used), or the
	// module failed before (a plan refused, a template that does not
	// parse, a placeholder check, a path clash), they stay as written.
	mod.itemsBefore = nil // taken by holdItems, or of no use once a plan holds
	mod.needsUnknown = len(reasons) > 0 || archive != nil && tmpls == nil
	mod.failedNeeds, mod.namedNeeds = nil, nil
	if len(reasons) > 0 {
		mod.failedNeeds, mod.namedNeeds = faults.needs(), named
	}
	inputs := []*graph.Node{mod.plan}
	if archive != nil {
		inputs = append(inputs, archive)
	}
	inputs = append(append(append(inputs, mod.files...), mod.items...), declared...)
	mod.node = m.derived(graph.Key{Kind: KindModule, Name: mod.name}, computeModule, inputs, &Origin{Module: mod.name})
	mod.owning[mod.node] = true

	m.reregisterItems(mod, oldItems)
	var gone []*graph.Node
	for _, n := range old {
		if !mod.owning[n] {
			gone = append(gone, n)
		}
	}
	m.collect(gone)
	mod.owned = make([]*graph.Node, 0, len(mod.owning)) // one allocation, not one per doubling
	for n := range mod.owning {
		mod.owned = append(mod.owned, n)
	}
	mod.owning = nil
}

func (m *NodeGraph) planValue(mod *module) string {
	if mod.asg == nil {
		return ""
	}
	if mod.planOf != mod.asg {
		mod.planVal = mod.key + "@" + mod.asg.Provisioning.Templates.Digest + "#" + planFingerprint(mod.asg)
		mod.planOf = mod.asg
	}
	return mod.planVal
}

func (m *NodeGraph) archiveLeaf(mod *module) *graph.Node {
	t := mod.asg.Provisioning.Templates
	n := m.leaf(KindArchive, mod.name, &Origin{Module: mod.name, Key: t.Ref}, func(*graph.Node) {})
	if o, ok := n.Meta.(*Origin); ok {
		o.Key = t.Ref
	}
	a, ok := m.archives[mod.name]
	switch {
	case !ok || a.digest != t.Digest:
		m.g.SetWaiting(n, "templates archive "+t.Ref+" ("+t.Digest+"): not fetched yet")
	case a.state == graph.Ready:
		m.g.Set(n, t.Digest)
	default:
		m.set(n, a.state, nil, a.why)
	}
	return n
}

// wireWaitingFiles: the templates are not here yet, so each file and each
// item waits on the archive alone (an item waiting is in its collection's
// inputs, shown in the module's view, and in the collection's text only
// with the text it had when last ready, still recorded: computeCollection).
func (m *NodeGraph) wireWaitingFiles(mod *module, archive *graph.Node) {
	for _, f := range mod.asg.Provisioning.Files {
		n := m.derived(graph.Key{Kind: KindFile, Name: mod.name + ":" + f.Path}, computeNothing,
			[]*graph.Node{mod.plan, archive}, &Origin{Module: mod.name, Path: f.Path})
		mod.files = append(mod.files, n)
		mod.owning[n] = true
	}
	for _, it := range mod.asg.Provisioning.Items {
		n := m.derived(itemKey(mod.name, it.Collection), computeNothing,
			[]*graph.Node{mod.plan, archive}, &Origin{Module: mod.name, Collection: it.Collection})
		mod.items = append(mod.items, n)
		mod.owning[n] = true
	}
}

// wireDeclaredSecrets: a secret the plan declares (a secrets[] entry, a
// named provisions entry) that no template names and no path writes is
// asked all the same (SPEC §4.2: each secret a plan names; the vault acts
// on a credential's form), and the module waits for it as for a value of
// its files. It returns their need nodes.
func (m *NodeGraph) wireDeclaredSecrets(mod *module) []*graph.Node {
	p := &mod.asg.Provisioning
	var out []*graph.Node
	add := func(name string) {
		if ph := (Placeholder{Kind: spec.Secret, Name: name}); mod.wiring[ph] == nil {
			n := m.needNode(mod, ph)
			out = append(out, n)
			mod.declaredOnly = append(mod.declaredOnly, n)
		}
	}
	for _, s := range p.Secrets {
		add(s.Name)
	}
	for _, pr := range p.Provisions {
		if pr.Name != "" {
			add(pr.Name)
		}
	}
	return out
}

// needKey is the key of a module's need node for placeholder ph.
func needKey(module string, ph Placeholder) graph.Key {
	return graph.Key{Kind: KindNeed, Name: module + "/" + ph.String()}
}

// itemKey is the key of a module's item node for collection c.
func itemKey(module, c string) graph.Key {
	return graph.Key{Kind: KindItem, Name: module + "/" + c}
}

func (m *NodeGraph) wireFiles(mod *module, archive *graph.Node, tmpls map[string]*Template) {
	p := &mod.asg.Provisioning
	head := []*graph.Node{mod.plan}
	if archive != nil {
		head = append(head, archive)
	}
	var budget *renderBudget // its files' rendered bytes, bounded (budget.go)
	if len(p.Files) > 0 {
		budget = &renderBudget{m: m, files: make([]*fileNode, 0, len(p.Files)), nodes: make([]*graph.Node, 0, len(p.Files))}
	}
	for _, f := range p.Files {
		t := tmpls[f.Template]
		needs, secret := m.needsOf(mod, t)
		spec := f
		spec.Mode = DefaultMode(f.Form, secret, f.Mode)
		fn := newFileNode(&m.renders, mod.name, spec, t, len(head), secret)
		fn.budget = budget
		n := m.derived(graph.Key{Kind: KindFile, Name: mod.name + ":" + f.Path},
			fn.render, append(append([]*graph.Node(nil), head...), needs...), fn) // OriginOf builds its Origin
		if secret {
			m.g.MarkSecret(n)
		}
		budget.files, budget.nodes = append(budget.files, fn), append(budget.nodes, n)
		mod.files = append(mod.files, n)
		mod.owning[n] = true
	}
	// A secret written to its own path restarts or reloads what reads it
	// as a templated file does (SPEC §3 r2): the request carries its on_change.
	secretFile := func(name, path, owner, group, mode string, oc OnChange) {
		need := m.needNode(mod, Placeholder{Kind: spec.Secret, Name: name})
		spec := FileSpec{Path: path, Owner: owner, Group: group, Form: "owned",
			Mode: SecretFileMode(mode), OnChange: oc}
		n := m.derived(graph.Key{Kind: KindFile, Name: mod.name + ":" + path}, secretContent(spec),
			[]*graph.Node{mod.plan, need}, &Origin{Module: mod.name, Path: path, Placeholder: "${secret:" + name + "}"})
		m.g.MarkSecret(n)
		mod.files = append(mod.files, n)
		mod.owning[n] = true
	}
	for _, s := range p.Secrets {
		if s.Path != "" {
			secretFile(s.Name, s.Path, s.Owner, s.Group, s.Mode, s.OnChange)
		}
	}
	for _, pr := range p.Provisions {
		if pr.Name != "" && pr.Path != "" {
			secretFile(pr.Name, pr.Path, pr.Owner, pr.Group, pr.Mode, pr.OnChange)
		}
	}
	for _, it := range p.Items {
		t := tmpls[it.Template]
		needs, _ := m.needsOf(mod, t)
		n := m.derived(itemKey(mod.name, it.Collection),
			renderItem(&m.renders, mod.name, it.Collection, t, len(head), m.itemRoom), append(append([]*graph.Node(nil), head...), needs...),
			&Origin{Module: mod.name, Collection: it.Collection})
		mod.items = append(mod.items, n)
		mod.owning[n] = true
	}
}

// needsOf returns the need nodes of t's placeholders, in t's order, and
// whether one of them is a secret or a consumers list.
func (m *NodeGraph) needsOf(mod *module, t *Template) ([]*graph.Node, bool) {
	phs := t.Placeholders()
	out := make([]*graph.Node, len(phs))
	secret := false
	for i, ph := range phs {
		out[i] = m.needNode(mod, ph)
		if spec.IsSecretKind(ph.Kind) {
			secret = true
		}
	}
	return out, secret
}

// needNode is the node of one placeholder of a module: it reads the
// registry's entry for the kind and the input that answers it.
func (m *NodeGraph) needNode(mod *module, ph Placeholder) *graph.Node {
	if n := mod.wiring[ph]; n != nil {
		return n
	}
	p := &mod.asg.Provisioning
	var src *graph.Node
	var more []*graph.Node
	compute := computeNeed
	row, _ := spec.Lookup(ph.Kind)
	switch row.Source {
	case spec.FromConfig: // the need is the leaf (config.go)
		n := m.configNeed(mod, ph.Name)
		mod.wiring[ph] = n
		mod.owning[n] = true
		return n
	case spec.FromPlacement:
		src = m.placementLeaf(mod, ph)
	case spec.FromVault:
		src = m.vaultLeaf(m.secretVaultName(mod, ph.Name))
	case spec.FromBound:
		x, l, k, _ := ParseBoundName(ph.Name)
		pr, _ := p.ProvisionFor(x, l)
		in := m.boundInputs(mod.name, pr, l)
		src, more = in[0], in[1:]
		compute = boundValue(pr.Provider, x, k)
	case spec.FromConsumers:
		src = m.consumersNode(mod.name, ph.Name)
	case spec.FromCollection:
		c := CollectionName(ph)
		cs, _ := p.Collects(c)
		src = m.collectionNode(c)
		compute = collectedText(cs.Comment)
	}
	n := m.derived(needKey(mod.name, ph), compute,
		append([]*graph.Node{m.registryLeaf(string(ph.Kind)), src}, more...), mod) // OriginOf builds its Origin
	if row.Secret {
		m.g.MarkSecret(n)
	}
	mod.wiring[ph] = n
	mod.owning[n] = true
	return n
}

func (m *NodeGraph) secretVaultName(mod *module, name string) string {
	p := &mod.asg.Provisioning
	for _, s := range p.Secrets {
		if s.Name == name {
			return spec.OwnSecretName(mod.name, name)
		}
	}
	for _, pr := range p.Provisions {
		if pr.Name == name {
			return spec.ProvisionSecretName(pr.Provider, pr.Provision, m.node, mod.name, pr.Local)
		}
	}
	return spec.OwnSecretName(mod.name, name)
}

func (m *NodeGraph) placementLeaf(mod *module, ph Placeholder) *graph.Node {
	n := m.leaf(KindPlacement, mod.name+"/"+string(ph.Kind)+"."+ph.Name,
		&Origin{Module: mod.name, Bucket: spec.AssignmentsBucket, Key: mod.key}, func(*graph.Node) {})
	mod.owning[n] = true
	if v, ok := mod.asg.Provisioning.Placement[string(ph.Kind)][ph.Name]; ok {
		m.g.Set(n, []byte(v))
	} else {
		m.g.SetWaiting(n, "placement."+string(ph.Kind)+"."+ph.Name+" is not in the plan of "+mod.name+" (the controller may add it)")
	}
	return n
}

// derived returns the node keyed k computed by f from inputs, rewiring it
// when it exists already.
func (m *NodeGraph) derived(k graph.Key, f graph.Compute, inputs []*graph.Node, origin any) *graph.Node {
	if n := m.g.Node(k); n != nil {
		m.g.SetCompute(n, f)
		_ = m.g.SetInputs(n, inputs...) // a cycle fails the node; the engine names it
		n.Meta = origin
		return n
	}
	n, _ := m.g.Derived(k, f, inputs...)
	n.Meta = origin
	return n
}

// collectionNode is collection c's items on this node.
func (m *NodeGraph) collectionNode(c string) *graph.Node {
	if n := m.existing(KindCollection, c); n != nil {
		return n
	}
	n, _ := m.g.Derived(graph.Key{Kind: KindCollection, Name: c}, computeCollection(m.itemsKept))
	m.g.MarkTolerant(n)
	n.Meta = &Origin{Collection: c, Bucket: spec.CollectBucket}
	m.refreshCollection(c)
	return n
}

// reregisterItems moves a module's items into their collections' inputs.
func (m *NodeGraph) reregisterItems(mod *module, oldItems []*graph.Node) {
	touched := map[string]bool{}
	for _, it := range oldItems {
		c := it.Meta.(*Origin).Collection
		delete(m.collItems[c], mod.name)
		touched[c] = true
	}
	for _, it := range mod.items {
		c := it.Meta.(*Origin).Collection
		if m.collItems[c] == nil {
			m.collItems[c] = map[string]*graph.Node{}
		}
		m.collItems[c][mod.name] = it
		touched[c] = true
	}
	for _, c := range sortedKeys(touched) {
		if m.existing(KindCollection, c) != nil {
			m.refreshCollection(c)
		}
	}
}

func (m *NodeGraph) refreshCollection(c string) {
	n := m.existing(KindCollection, c)
	contributors := make([]string, 0, len(m.collItems[c]))
	for name := range m.collItems[c] {
		contributors = append(contributors, name)
	}
	sort.Strings(contributors)
	inputs := make([]*graph.Node, len(contributors))
	for i, name := range contributors {
		inputs[i] = m.collItems[c][name]
	}
	_ = m.g.SetInputs(n, inputs...)
}

// removeModule takes a module off this node.
func (m *NodeGraph) removeModule(mod *module) {
	delete(m.mods, mod.name)
	m.nameDigest(mod.asg, -1)
	defer m.unclaim(mod.name)
	defer func() { // its secrets held without a leaf; those with one go in collect
		for name := range m.secrets {
			if m.heldFor(name) == mod.name && m.existing(KindVault, name) == nil {
				delete(m.secrets, name)
			}
		}
	}()
	defer m.pruneParsed()
	delete(m.archives, mod.name)
	items := mod.items
	mod.items = nil
	m.reregisterItems(mod, items)
	gone := mod.owned
	mod.owned = nil
	m.collect(gone)
}

// collect removes the given nodes once nothing reads them, and then the
// inputs they read that nothing reads any more (a secret's value is
// forgotten with its leaf).
func (m *NodeGraph) collect(cands []*graph.Node) {
	for len(cands) > 0 {
		n := cands[len(cands)-1]
		cands = cands[:len(cands)-1]
		if n.Removed() || len(n.Dependents()) > 0 || m.ownedByLive(n) {
			continue
		}
		inputs := append([]*graph.Node(nil), n.Inputs()...)
		v, ready := n.Value(), n.State() == graph.Ready
		if err := m.g.Remove(n); err != nil {
			continue
		}
		switch n.Key().Kind {
		case KindNeed:
			m.configNeedGone(n, v, ready)
		case KindVault:
			// A module's own secret is held while the module is here (a
			// plan moving to a new templates archive rebuilds its files,
			// and a secret is asked once per run); anything else goes.
			if name := n.Key().Name; m.mods[m.heldFor(name)] == nil {
				delete(m.secrets, name)
			}
		case KindBound:
			m.boundGone(n)
		case KindItem:
			delete(m.itemsKept, n)
		}
		cands = append(cands, inputs...)
		if n.Key().Kind == KindConsumers {
			if b := m.existing(KindBindings, n.Key().Name); b != nil {
				cands = append(cands, b)
			}
		}
	}
}

func (m *NodeGraph) ownedByLive(n *graph.Node) bool {
	name := moduleOf(n)
	if name == "" {
		return false
	}
	switch mod := m.mods[name]; {
	case mod == nil:
		return false
	case mod.owning != nil: // its rebuild is running
		return mod.owning[n]
	default:
		return slices.Contains(mod.owned, n)
	}
}

func sortStrings(s []string) { sort.Strings(s) }

// cycleReason names a refused cycle in the SPEC's words: the collections
// and items on it in data-flow order, starting at the first collection by
// name (so every module on it says the same), e.g.
// "collection cycle: c1 → item a/c2 → c2 → item b/c1 → c1".
func cycleReason(c *graph.CycleError) string {
	keys := c.Cycle
	if len(keys) > 1 && keys[0] == keys[len(keys)-1] {
		keys = keys[:len(keys)-1]
	}
	start, colls := 0, 0
	for i, k := range keys {
		if k.Kind == KindCollection {
			if colls == 0 || k.Name < keys[start].Name {
				start = i
			}
			colls++
		}
	}
	var parts []string
	for i := range keys {
		k := keys[(start+i)%len(keys)]
		switch k.Kind {
		case KindNeed:
			// the placeholder between a collection and its reader says nothing more
		case KindCollection:
			parts = append(parts, k.Name)
		default:
			parts = append(parts, k.Kind+" "+k.Name)
		}
	}
	if len(parts) == 0 {
		return c.Error()
	}
	parts = append(parts, parts[0])
	if colls == 0 {
		return "cycle: " + strings.Join(parts, " → ")
	}
	return "collection cycle: " + strings.Join(parts, " → ") +
		" (each item names the collection before it and is collected in the one after it)"
}

// cycleOf is the refused cycle n is on, or nil.
func (m *NodeGraph) cycleOf(n *graph.Node) *graph.CycleError {
	for _, c := range m.g.Cycles() {
		for _, k := range c.Cycle {
			if k == n.Key() {
				return c
			}
		}
	}
	return nil
}

package nodes

import (
	"cmp"
	"hash/maphash"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Stabilize recomputes what the last changes made dirty and returns this
// node's modules whose files, items, needs or state may have moved, sorted.
func (m *NodeGraph) Stabilize() []string {
	if !m.claims.started {
		m.firstStabilization() // keptplans.go
	}
	m.claims.started = true // modules taken from now on are ordered by arrival (clash.go)
	m.flushConsumers()
	touched := map[string]bool{}
	seen := map[*graph.Node]bool{}
	for round := 0; ; round++ {
		for _, n := range m.g.Stabilize() {
			m.touch(n, touched)
			m.keepItem(n)
			if n.Root() || n.State() == graph.Ready {
				// A leaf, or a node whose compute waits or fails (a
				// consumers list waiting for the vault), that still does so
				// for a new reason, or that no longer does while what it
				// held up still waits for something else (a need whose
				// registry entry is missing too), leaves its dependents'
				// own states alone (cutoff), but the modules they hold up
				// must say the reasons that stand. touchHeldUp walks only
				// dependents not ready: nothing for a value that moved
				// under met files.
				m.touchHeldUp(n, touched, seen)
			}
		}
		// Files a module's budget refused that fit now render again (a
		// few rounds at most here; the rest after the next change).
		if len(m.overBudget) == 0 || round == 3 || !m.retryBudgets() {
			break
		}
	}
	return sortedKeys(touched)
}

// keepItem: when changed node n is an item, itemsKept follows what the
// collect bucket then holds of it (the stage records it from the module's
// view the same way): a ready item's text is kept, a failed item's is
// forgotten (the stage deletes it), a waiting item keeps what it had.
// computeCollection reads it for a waiting item. It runs after the
// stabilization, which is soon enough: a collection reads a ready item's
// value itself, and what it reads for a waiting item was kept in the run
// that last made the item ready, an earlier one.
func (m *NodeGraph) keepItem(n *graph.Node) {
	if n.Key().Kind != KindItem || n.Secret() {
		return
	}
	switch n.State() {
	case graph.Ready:
		text, _ := n.Value().([]byte)
		m.itemsKept[n] = text
	case graph.Failed:
		delete(m.itemsKept, n)
	}
}

func (m *NodeGraph) touch(n *graph.Node, touched map[string]bool) {
	switch n.Key().Kind {
	case KindNeed, KindFile, KindItem, KindModule, KindPlan, KindArchive:
	default:
		return
	}
	if name := moduleOf(n); name != "" && m.mods[name] != nil {
		touched[name] = true
	}
}

// touchHeldUp touches the modules of the nodes n keeps from being ready.
func (m *NodeGraph) touchHeldUp(n *graph.Node, touched map[string]bool, seen map[*graph.Node]bool) {
	for _, d := range n.Dependents() {
		if seen[d] || d.State() == graph.Ready {
			continue
		}
		seen[d] = true
		m.touch(d, touched)
		m.touchHeldUp(d, touched, seen)
	}
}

// ModuleView is what the outputs need of a module after a stabilization.
type ModuleView struct {
	Name   string
	Plan   string // what the plan is (it changes with the plan); "" when it does not parse
	State  graph.State
	Reason string // failed: the reasons of the root causes
	Since  time.Time
	Files  []FileView
	Items  []ItemView
	Needs  []NeedView
	// NeedsUnknown: its placeholders are not known, so Needs lists none
	// and the needs written for it stay as they are (SPEC §5.2: a need is
	// deleted when no template names it any more, which nothing says):
	// the plan's templates are not read yet (its archive waits, or cannot
	// be used), or the module failed before its files were wired (a plan
	// refused, a template that does not parse, a placeholder check, a
	// path another module holds). Deleting them at a failure took every
	// need of the module away at one typo in its plan, as if it had left,
	// under a provider that reads the needs bucket; their states stay as
	// last written, and the report says the module failed and why.
	NeedsUnknown bool
	// FailedNeeds: with NeedsUnknown, the placeholders that fail the
	// module at plan level (its plan makes them impossible: a secret it
	// does not declare, consumers of a provision it does not provide, an
	// item naming a secret, a bound provision or a collection it does not
	// list, a kind this client does not fill), each failed with what the
	// reason says of it. Each is written as a need, failed, while the
	// others stay as written (SPEC §5.2: a fleet operator, and the
	// server's sweep, see which need failed the module).
	FailedNeeds []NeedView
	// NamedNeeds: with FailedNeeds, every placeholder the module's
	// templates name, when each template was read (nil: not known, a
	// template missing or not parsing). A need written that none names
	// any more is deleted (SPEC §5.2), also one written by the last run
	// (§4.7: a placeholder dropped while the client was down); one still
	// named stays as written, its state not known while the module fails.
	NamedNeeds map[Placeholder]bool
}

// FileView is one file of a module.
type FileView struct {
	Path  string
	State graph.State
	Why   string
	Value *FileValue // nil unless ready
}

// ItemView is one item a module contributes.
type ItemView struct {
	Collection string
	State      graph.State
	Why        string
	Text       []byte
}

// NeedView is one placeholder of a module and its state; Why names the
// root causes when it is not met.
type NeedView struct {
	Kind, Name string
	State      graph.State
	Why        string
	// Declared: a secret the plan declares that no template names. It is
	// asked and waited for (SPEC §4.2), but it is no placeholder, so no
	// need of the needs bucket (§5.2: deleted when no template names it).
	Declared bool
}

// View returns module's view, or nil when it is not on this node.
func (m *NodeGraph) View(module string) *ModuleView {
	v := m.ViewLean(module)
	if v != nil {
		v.Needs = m.Needs(module)
	}
	return v
}

// ViewLean is View without the needs (Needs nil): a module of a hundred
// files may have a thousand, and the output stage asks for them only when
// NeedsSum says they moved (issue 20: their list was most of what a
// change allocated at 10k files).
func (m *NodeGraph) ViewLean(module string) *ModuleView {
	mod := m.mods[module]
	if mod == nil {
		return nil
	}
	v := &ModuleView{Name: module, Plan: m.planValue(mod), State: mod.node.State(), Since: mod.node.Since(), NeedsUnknown: mod.needsUnknown, FailedNeeds: mod.failedNeeds, NamedNeeds: mod.namedNeeds}
	if v.State != graph.Ready {
		v.Reason = m.RootReason(mod.node)
	}
	v.Files = make([]FileView, 0, len(mod.files)) // one allocation each: a view is made per change of its module
	v.Items = make([]ItemView, 0, len(mod.items))
	for _, f := range mod.files {
		fv := FileView{Path: filePath(f), State: f.State()}
		if f.State() == graph.Ready {
			fv.Value = f.Value().(*FileValue)
		} else {
			fv.Why = m.RootReason(f)
		}
		v.Files = append(v.Files, fv)
	}
	for _, it := range mod.items {
		iv := ItemView{Collection: it.Meta.(*Origin).Collection, State: it.State()}
		if it.State() == graph.Ready {
			iv.Text = it.Value().([]byte)
		} else {
			iv.Why = m.RootReason(it)
		}
		v.Items = append(v.Items, iv)
	}
	return v
}

// Needs is module's needs as View says them, by kind then name; nil when
// it is not on this node.
func (m *NodeGraph) Needs(module string) []NeedView {
	mod := m.mods[module]
	if mod == nil {
		return nil
	}
	out := make([]NeedView, 0, len(mod.needs))
	for _, n := range mod.needs {
		ph := needPlaceholder(n, module)
		nv := NeedView{Kind: string(ph.Kind), Name: ph.Name, State: n.State(), Declared: slices.Contains(mod.declaredOnly, n)}
		if n.State() != graph.Ready {
			nv.Why = m.RootReason(n)
		}
		out = append(out, nv)
	}
	return out
}

// CountNeedStates adds to counts how many of module's needs (a secret
// only declared aside: no need, SPEC §5.2) are in each state, without
// making their list or their whys (a scrape of /metrics counts every
// module's).
func (m *NodeGraph) CountNeedStates(module string, counts map[graph.State]int) {
	mod := m.mods[module]
	if mod == nil {
		return
	}
	for _, n := range mod.needs {
		if len(mod.declaredOnly) == 0 || !slices.Contains(mod.declaredOnly, n) {
			counts[n.State()]++
		}
	}
	counts[graph.Failed] += len(mod.failedNeeds) // written failed (ModuleView.FailedNeeds)
}

// NeedsLen is how many needs Needs would list, without making the list.
func (m *NodeGraph) NeedsLen(module string) int {
	if mod := m.mods[module]; mod != nil {
		return len(mod.needs)
	}
	return 0
}

// NeedsSum is SumNeeds of module's Needs, without making their list. The
// needs' kinds and names are summed once per rebuild of the module (they
// change only then), their states and whys on every call.
func (m *NodeGraph) NeedsSum(module string, seed maphash.Seed) uint64 {
	mod := m.mods[module]
	if mod == nil {
		return 0
	}
	if !mod.namesOK || mod.namesSeed != seed {
		x := uint64(len(mod.needs))
		for _, n := range mod.needs {
			ph := needPlaceholder(n, module)
			x = mixName(x, seed, string(ph.Kind), ph.Name)
			if slices.Contains(mod.declaredOnly, n) {
				x = mixName(x, seed, "declared", "") // a template naming it no more moves the sum
			}
		}
		mod.namesSum, mod.namesSeed, mod.namesOK = x, seed, true
	}
	x := mod.namesSum
	for _, n := range mod.needs {
		st, why := n.State(), ""
		if st != graph.Ready {
			why = m.RootReason(n)
		}
		x = mixState(x, seed, st, why)
	}
	return x
}

// SumNeeds stands for needs (their fields, in their order): what tells a
// module's needs from those it had, without keeping them. Each field's
// maphash is mixed in turn (one maphash.Hash written field by field cost
// ~40 ns a need, this ~15): the kinds and names first, then the states
// and whys, so the first part can be kept (NeedsSum).
func SumNeeds(seed maphash.Seed, needs []NeedView) uint64 {
	x := uint64(len(needs))
	for i := range needs {
		x = mixName(x, seed, needs[i].Kind, needs[i].Name)
	}
	for i := range needs {
		x = mixState(x, seed, needs[i].State, needs[i].Why)
	}
	return x
}

func mixName(x uint64, seed maphash.Seed, kind, name string) uint64 {
	return mix(mix(x, maphash.String(seed, kind)), maphash.String(seed, name))
}

func mixState(x uint64, seed maphash.Seed, state graph.State, why string) uint64 {
	x = mix(x, uint64(state))
	if why != "" {
		x = mix(x, maphash.String(seed, why))
	}
	return x
}

// mix folds v into x, order mattering (a rotate and a multiply: the
// fields' hashes are already uniform).
func mix(x, v uint64) uint64 {
	return bits.RotateLeft64(x^v, 29)*0x9e3779b97f4a7c15 + 1
}

// needPlaceholder is the placeholder of module's need node n, read from
// its key (needKey) without allocating: a module's needs list keeps only
// the nodes (a placeholder beside each cost 32 bytes a need, ~170 bytes a
// file at 10k files).
func needPlaceholder(n *graph.Node, module string) Placeholder {
	name := n.Key().Name
	ph := name[len(module)+3 : len(name)-1] // module + "/${" … "}"
	kind, rest, _ := strings.Cut(ph, ":")   // a kind holds no ':'
	return Placeholder{Kind: spec.Kind(kind), Name: rest}
}

// sortNeeds lists a module's need nodes by kind, then name: sorted once per
// rebuild, not on every View (a change of one value views its module
// again, and a module may have hundreds of needs).
func sortNeeds(module string, needs map[Placeholder]*graph.Node) []*graph.Node {
	out := make([]*graph.Node, 0, len(needs))
	for _, n := range needs {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *graph.Node) int {
		pa, pb := needPlaceholder(a, module), needPlaceholder(b, module)
		return cmp.Or(cmp.Compare(pa.Kind, pb.Kind), cmp.Compare(pa.Name, pb.Name))
	})
	return out
}

// RootReason joins the reasons of n's root causes (failed ones first).
func (m *NodeGraph) RootReason(n *graph.Node) string {
	roots := m.g.RootCauses(n)
	var failed, waiting []string
	for _, r := range roots {
		if r.State() == graph.Failed {
			why := r.Why()
			if strings.HasPrefix(why, "cycle: ") {
				if c := m.cycleOf(r); c != nil {
					why = cycleReason(c)
				}
			}
			failed = appendOnce(failed, why)
		} else {
			waiting = appendOnce(waiting, r.Why())
		}
	}
	if len(failed) > 0 {
		return strings.Join(failed, "; ")
	}
	return strings.Join(waiting, "; ")
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ModuleNode is the graph node of module (for explain and DOT).
func (m *NodeGraph) ModuleNode(module string) *graph.Node {
	if mod := m.mods[module]; mod != nil {
		return mod.node
	}
	return nil
}

// Renders counts the files and items this mesh rendered.
func (m *NodeGraph) Renders() *RenderCounts { return &m.renders }

// Ready says the module's view is complete: every file rendered.
func (v *ModuleView) Ready() bool { return v.State == graph.Ready }

// DOT renders the graph in Graphviz form, as graph.DOT does: all of it when
// module is "", else the module and what it reads; ok is false when module
// is not on this node. A config need is drawn with the key it reads (or the
// registry's entry it waits for) as its input (Behind).
func (m *NodeGraph) DOT(name, module string) (out []byte, ok bool, err error) {
	return m.DOTSaid(name, module, nil)
}

// DOTSaid is DOT with each module drawn in the state said returns for it
// when it says one (ok): what its report says, where that is more than its
// graph knows (the fill socket refused its files: failed, though every
// value is there). Its files are drawn as their values are, met, as
// explain says them. said nil: every node as its graph has it.
func (m *NodeGraph) DOTSaid(name, module string, said func(module string) (graph.State, bool)) (out []byte, ok bool, err error) {
	d := graph.Drawing{Behind: m.folded}
	if said != nil {
		d.Shown = func(n *graph.Node) (graph.State, bool) {
			if k := n.Key(); k.Kind == KindModule && m.mods[k.Name] != nil && m.mods[k.Name].node == n {
				return said(k.Name)
			}
			return n.State(), false
		}
	}
	if module == "" {
		out, err = m.g.DOTDrawn(name, d)
		return out, true, err
	}
	mod := m.mods[module]
	if mod == nil {
		return nil, false, nil
	}
	out, err = m.g.DOTDrawn(name, d, mod.node.Key())
	return out, true, err
}

// GraphLen is how many nodes the mesh's graph holds.
func (m *NodeGraph) GraphLen() int { return m.g.Len() }

// Counters are the engine's counters of this mesh's graph.
func (m *NodeGraph) Counters() *graph.Counters { return m.g.Counters() }

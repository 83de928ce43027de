package nodes

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// claims is what each of this node's modules says it writes, for the
// clash check of SPEC §4.3 (r2): a path written owned or seed is one
// module's; managed-block and managed-keys paths may be shared (a key
// claimed twice is left to the node-engine's 409: which keys a
// managed-keys file sets is known only once it is rendered). Of two
// modules that clash, the one taken second fails naming the first, before
// any fill. Order is per claim, not per module: a module that holds a
// path keeps it when another module, however long on the node, names it
// later (the newcomer fails, as the node-engine would refuse it).
type claims struct {
	started bool                     // the first stabilization is done: order is by arrival, not name
	seq     int                      // claims made since then
	paths   map[string][]claimedPath // module → the paths it writes and how, by path
	// byPath is each path's first holder and more its others (a path two
	// modules may share): one map entry a path, not a slice each (issue
	// 20: the claims were ~160 bytes a filled file at 10k files).
	byPath  map[string]claimed
	more    map[string][]claimed
	reasons map[string]string // module → its clashes, as last built into its plan
	busy    bool              // rebuilding the modules a change touched
	// before: path → the module that held it before this run (HeldBefore);
	// among claims made in the first load it is taken first.
	before map[string]string
}

// claimed is one module's claim on a path, made at seq (0: at start, a
// tie broken by module name; heldSeq: the node-engine said it holds it).
type claimed struct {
	module, form string
	seq          int
}

// claimedPath is one path a module writes, in which form, claimed when.
type claimedPath struct {
	path, form string
	seq        int
}

// claim records what mod's plan writes and returns its clashes with the
// modules taken before it.
func (m *NodeGraph) claim(mod *module) []string {
	c := &m.claims
	if c.paths == nil {
		c.paths, c.reasons = map[string][]claimedPath{}, map[string]string{}
		c.byPath, c.more = map[string]claimed{}, map[string][]claimed{}
	}
	old := c.paths[mod.name]
	var now []claimedPath
	if mod.asg == nil {
		// A refused plan (it does not parse, or breaks a rule) writes
		// nothing and removes nothing: the node-engine still holds what
		// the module's last plan wrote, and the module keeps its claims.
		// Let go, another module took its paths at once, which the
		// node-engine refused (409), and the module, its plan fixed, came
		// back second and failed for good: neither applied until a
		// restart.
		now = old
	} else {
		p := &mod.asg.Provisioning
		for _, f := range p.Files {
			now = append(now, claimedPath{path: f.Path, form: formOf(f.Form)})
		}
		for _, s := range p.Secrets {
			if s.Path != "" {
				now = append(now, claimedPath{path: s.Path, form: FormOwned})
			}
		}
		for _, pr := range p.Provisions {
			if pr.Name != "" && pr.Path != "" {
				now = append(now, claimedPath{path: pr.Path, form: FormOwned})
			}
		}
		now = byPathOnce(now)
		c.stamp(old, now)
	}
	c.setPaths(mod.name, old, now)
	reasons := m.clashesOf(mod.name)
	c.reasons[mod.name] = strings.Join(reasons, "; ")
	if !c.busy {
		m.reclaim(mod.name, old, now)
	}
	return reasons
}

// byPathOnce sorts ps by path, a path named twice keeping its last form
// (as the plan's later entry wins), in a slice of its exact length.
func byPathOnce(ps []claimedPath) []claimedPath {
	slices.SortStableFunc(ps, func(a, b claimedPath) int { return strings.Compare(a.path, b.path) })
	out := make([]claimedPath, 0, len(ps))
	for i, p := range ps {
		if i+1 < len(ps) && ps[i+1].path == p.path {
			continue
		}
		out = append(out, p)
	}
	return out
}

// stamp gives each claim of now the time it was made: an old claim's
// (the same path in old, both sorted by path), else the next claim's, or 0
// in the first load.
func (c *claims) stamp(old, now []claimedPath) {
	j := 0
	for i := range now {
		for j < len(old) && old[j].path < now[i].path {
			j++
		}
		if j < len(old) && old[j].path == now[i].path {
			now[i].seq = old[j].seq
			continue
		}
		if c.started {
			c.seq++
			now[i].seq = c.seq
		}
	}
}

// formOf is a file's form as one of the Form constants (the plan's
// decoded string is a copy each; none is owned).
func formOf(form string) string {
	for _, f := range [...]string{FormOwned, FormSeed, FormManagedKeys, FormManagedBlock} {
		if form == f {
			return f
		}
	}
	return cmp.Or(form, FormOwned)
}

// unclaim forgets a module taken off the node, and rebuilds the modules
// it clashed with.
func (m *NodeGraph) unclaim(name string) {
	c := &m.claims
	old := c.paths[name]
	c.setPaths(name, old, nil)
	delete(c.reasons, name)
	m.reclaim(name, old, nil)
}

// reclaim rebuilds the other modules on the paths name held or holds whose
// clashes changed.
func (m *NodeGraph) reclaim(name string, old, now []claimedPath) {
	c := &m.claims
	c.busy = true
	defer func() { c.busy = false }()
	others := map[string]bool{}
	for _, ps := range [][]claimedPath{old, now} {
		for _, p := range ps {
			c.eachHolder(p.path, func(h claimed) {
				if h.module != name {
					others[h.module] = true
				}
			})
		}
	}
	for _, other := range slices.Sorted(maps.Keys(others)) {
		if strings.Join(m.clashesOf(other), "; ") != c.reasons[other] {
			if mod := m.mods[other]; mod != nil {
				m.rebuild(mod)
			}
		}
	}
}

// eachHolder calls fn for each module that claims path p.
func (c *claims) eachHolder(p string, fn func(claimed)) {
	h, ok := c.byPath[p]
	if !ok {
		return
	}
	fn(h)
	for _, h := range c.more[p] {
		fn(h)
	}
}

// setPaths makes now the paths name writes, in both indexes (nil: none).
func (c *claims) setPaths(name string, old, now []claimedPath) {
	for _, op := range old {
		p := op.path
		others := slices.DeleteFunc(c.more[p], func(h claimed) bool { return h.module == name })
		if first, ok := c.byPath[p]; ok && first.module == name {
			if len(others) == 0 {
				delete(c.byPath, p)
			} else {
				c.byPath[p], others = others[0], others[1:]
			}
		}
		if len(others) == 0 {
			delete(c.more, p)
		} else {
			c.more[p] = others
		}
	}
	for _, np := range now {
		h := claimed{name, np.form, np.seq}
		if _, ok := c.byPath[np.path]; !ok {
			c.byPath[np.path] = h
		} else {
			c.more[np.path] = append(c.more[np.path], h)
		}
	}
	if now == nil {
		delete(c.paths, name)
	} else {
		c.paths[name] = now
	}
}

// clashesOf says, path by path, which module claimed before name a path
// name writes, in a way the two cannot share.
func (m *NodeGraph) clashesOf(name string) []string {
	c := &m.claims
	var out []string
	for _, mine := range c.paths[name] { // by path
		me := claimed{name, mine.form, mine.seq}
		var first []claimed
		c.eachHolder(mine.path, func(h claimed) {
			if h.module != name && c.compare(mine.path, h, me) < 0 && !shareable(h.form, mine.form) {
				first = append(first, h)
			}
		})
		if len(first) == 0 {
			continue
		}
		slices.SortFunc(first, func(a, b claimed) int { return c.compare(mine.path, a, b) })
		e := first[0]
		out = append(out, "path "+mine.path+" is written "+mine.form+" by module "+name+" and "+e.form+" by module "+e.module+
			" (taken first): a path written owned or seed is one module's")
	}
	return out
}

// shareable says whether two modules may write one path in these forms.
func shareable(a, b string) bool {
	return (a == FormManagedBlock || a == FormManagedKeys) && (b == FormManagedBlock || b == FormManagedKeys)
}

// compare orders two claims on path: by when each was made, and among
// those made at start (before the first stabilization, so in one load,
// whatever order the bucket gave them in) the module that held the path
// before this run first, then by byte order of module.
func (c *claims) compare(path string, a, b claimed) int {
	return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(c.heldBy(path, b), c.heldBy(path, a)),
		strings.Compare(a.module, b.module))
}

// heldBy is 1 when h, a claim made at start, is by the module that held
// path before this run.
func (c *claims) heldBy(path string, h claimed) int {
	if h.seq == 0 && c.before[path] == h.module {
		return 1
	}
	return 0
}

// heldSeq is the seq of a claim the node-engine's word made (Holds): ahead
// of every claim this run made, as its declaration is.
const heldSeq = -1

// Holds says, for each path, which module the node-engine holds it for
// (its 409 refusing another module's request named the holder; SPEC §4.3:
// the node-engine's declarations are who holds a path). The holder's
// claim on the path is put ahead of every other, and the modules whose
// clashes that changes are built again: the holder, once its plan is
// usable, takes the path, and the module refused fails naming it. Without
// it, a holder whose plan the client refused since it started (no claim
// made, no HeldBefore for it) lost the path in the client's eyes: the
// other module was refused by the node-engine at every tick, and the
// holder, its plan fixed, failed "taken first" by it; neither applied
// until a restart. A holder not on the node (its removal is on its way)
// or whose usable plan no longer names the path (its next whole request
// lets go of it) is left alone. A refused holder's claim is owned: the
// node-engine refuses only what cannot share the path with it, and its
// form is known again with its plan.
func (m *NodeGraph) Holds(held map[string]string) {
	c := &m.claims
	for _, p := range slices.Sorted(maps.Keys(held)) {
		h := held[p]
		mod := m.mods[h]
		if mod == nil || c.paths == nil {
			continue
		}
		old := c.paths[h]
		i, found := slices.BinarySearchFunc(old, p, func(cp claimedPath, p string) int { return strings.Compare(cp.path, p) })
		switch {
		case found && old[i].seq == heldSeq:
			continue // known
		case !found && mod.asg != nil:
			continue
		}
		now := slices.Clone(old)
		if found {
			now[i].seq = heldSeq
		} else {
			now = slices.Insert(now, i, claimedPath{path: p, form: FormOwned, seq: heldSeq})
		}
		c.setPaths(h, old, now)
		if strings.Join(m.clashesOf(h), "; ") != c.reasons[h] {
			m.rebuild(mod) // its claim rebuilds the others on its paths
		} else {
			m.reclaim(h, old, now)
		}
	}
}

// HeldBefore says which module held each path before this run (the last
// run's reports: path → module). Among the claims made in the first load,
// a path's holder before is taken first, and the modules whose clashes
// that changes are built again: without it a restart ordered them by
// name, so a module that had held a path for good failed after a restart
// while the newcomer it had kept out was refused by the node-engine,
// whose declarations still named the holder (SPEC §4.3: 409): both
// failed, for good. Only before the first stabilization.
func (m *NodeGraph) HeldBefore(held map[string]string) {
	c := &m.claims
	if c.started || len(held) == 0 {
		return
	}
	c.before = map[string]string{} // kept for the paths claimed twice alone (a later rebuild compares them again)
	for p, h := range held {
		if len(c.more[p]) > 0 {
			c.before[p] = h
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.paths)) {
		if strings.Join(m.clashesOf(name), "; ") != c.reasons[name] {
			if mod := m.mods[name]; mod != nil {
				m.rebuild(mod)
			}
		}
	}
}

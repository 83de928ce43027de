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
// any fill.
type claims struct {
	started bool                         // the first stabilization is done: order is by arrival, not name
	seq     int                          // modules taken since then
	order   map[string]int               // module → when it was taken (0: at start, a tie)
	paths   map[string]map[string]string // module → path → form
	byPath  map[string][]claimed         // path → its holders: the same, by path (a slice: almost every path has one)
	reasons map[string]string            // module → its clashes, as last built into its plan
	busy    bool                         // rebuilding the modules a change touched
}

// claimed is one module's claim on a path.
type claimed struct{ module, form string }

// claim records what mod's plan writes and returns its clashes with the
// modules taken before it.
func (m *NodeGraph) claim(mod *module) []string {
	c := &m.claims
	if c.order == nil {
		c.order, c.paths, c.reasons = map[string]int{}, map[string]map[string]string{}, map[string]string{}
		c.byPath = map[string][]claimed{}
	}
	if _, ok := c.order[mod.name]; !ok {
		if c.started {
			c.seq++
		}
		c.order[mod.name] = c.seq
	}
	old := c.paths[mod.name]
	now := map[string]string{}
	if mod.asg != nil {
		p := &mod.asg.Provisioning
		for _, f := range p.Files {
			now[f.Path] = cmp.Or(f.Form, FormOwned)
		}
		for _, s := range p.Secrets {
			if s.Path != "" {
				now[s.Path] = FormOwned
			}
		}
		for _, pr := range p.Provisions {
			if pr.Name != "" && pr.Path != "" {
				now[pr.Path] = FormOwned
			}
		}
	}
	c.setPaths(mod.name, old, now)
	reasons := m.clashesOf(mod.name)
	c.reasons[mod.name] = strings.Join(reasons, "; ")
	if !c.busy {
		m.reclaim(mod.name, old, now)
	}
	return reasons
}

// unclaim forgets a module taken off the node, and rebuilds the modules
// it clashed with.
func (m *NodeGraph) unclaim(name string) {
	c := &m.claims
	old := c.paths[name]
	c.setPaths(name, old, nil)
	delete(c.order, name)
	delete(c.reasons, name)
	m.reclaim(name, old, nil)
}

// reclaim rebuilds the other modules on the paths name held or holds whose
// clashes changed.
func (m *NodeGraph) reclaim(name string, old, now map[string]string) {
	c := &m.claims
	c.busy = true
	defer func() { c.busy = false }()
	others := map[string]bool{}
	for _, ps := range []map[string]string{old, now} {
		for p := range ps {
			for _, h := range c.byPath[p] {
				if h.module != name {
					others[h.module] = true
				}
			}
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

// setPaths makes now the paths name writes, in both indexes (nil: none).
func (c *claims) setPaths(name string, old, now map[string]string) {
	for p := range old {
		holders := slices.DeleteFunc(c.byPath[p], func(h claimed) bool { return h.module == name })
		if len(holders) == 0 {
			delete(c.byPath, p)
		} else {
			c.byPath[p] = holders
		}
	}
	for p, form := range now {
		c.byPath[p] = append(c.byPath[p], claimed{name, form})
	}
	if now == nil {
		delete(c.paths, name)
	} else {
		c.paths[name] = now
	}
}

// clashesOf says, path by path, which module taken before name writes a
// path name writes in a way the two cannot share.
func (m *NodeGraph) clashesOf(name string) []string {
	c := &m.claims
	mine := c.paths[name]
	var out []string
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range mine {
			if !yield(p) {
				return
			}
		}
	}) {
		var first []claimed
		for _, h := range c.byPath[p] {
			if h.module != name && m.before(h.module, name) && !shareable(h.form, mine[p]) {
				first = append(first, h)
			}
		}
		if len(first) == 0 {
			continue
		}
		slices.SortFunc(first, func(a, b claimed) int { return m.compareOrder(a.module, b.module) })
		e := first[0]
		out = append(out, "path "+p+" is written "+mine[p]+" by module "+name+" and "+e.form+" by module "+e.module+
			" (taken first): a path written owned or seed is one module's")
	}
	return out
}

// shareable says whether two modules may write one path in these forms.
func shareable(a, b string) bool {
	return (a == FormManagedBlock || a == FormManagedKeys) && (b == FormManagedBlock || b == FormManagedKeys)
}

// before says whether module a was taken before b: by arrival, and by
// byte order of name among those taken at start (before the first
// stabilization, so in one load, whatever order the bucket gave them in).
func (m *NodeGraph) before(a, b string) bool { return m.compareOrder(a, b) < 0 }

func (m *NodeGraph) compareOrder(a, b string) int {
	return cmp.Or(cmp.Compare(m.claims.order[a], m.claims.order[b]), strings.Compare(a, b))
}

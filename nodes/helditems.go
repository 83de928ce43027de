package nodes

import (
	"maps"
	"slices"

	"github.com/novox/mesh-provisioner/graph"
)

// holdItems keeps, while mod fails (its value does not parse, its plan
// breaks a rule, a template of it does not parse, a path it claims is
// another's), the items its last plan that held contributed: each item node stays,
// read by its collection, waiting with why and reading nothing, so the
// text it last had stays in the collection (itemsKept, computeCollection)
// and the stage leaves its record in mesh-provisioner_collect as it is (a
// waiting item keeps what is recorded).
//
// SPEC §3 fails the module whose assignment does not parse and leaves the
// other modules untouched. Dropping its items rewrote every collector's
// file without them and restarted its program, and again once the plan
// was fixed: one typo in a contributor's plan restarted every collector
// of its collections twice. A value that does not parse says nothing of
// what the module contributes, so what it last contributed stands (as its
// bindings and offers do: keepBindings). A plan that parses and breaks a
// rule, or whose templates do not, fails its module the same way (SPEC §3
// names both), and an outside audit found a missing `credential` or an
// unclosed `${` in one module stripping its block from every collector
// and reloading their programs: its items are held too. A value with no
// plan, or the key deleted, is the module leaving and still takes the
// items out. Fixed, the same item node is rendered from the new plan: recorded
// and its collectors filled again only if its text changed (cutoff).
//
// A client started on a value that does not parse has no plan of the
// module that parsed: the items the last run recorded for it (the collect
// bucket's, read by the start's Sweep: ItemsBefore) are held with that
// text, so a restart moves no collector either. Those are known only from
// the start's Sweeps before the first stabilization (the first fill waits
// for them, bounded: stage.ReadingBack); a module whose
// value does not parse from a later assignment on has nothing recorded to
// hold.
// One whose plan parsed in the start's snapshot and broke before the first
// fill (while it waits for the vault: firstLooks) holds items never
// computed: the last run's text stands for them too.
func (m *NodeGraph) holdItems(mod *module, old []*graph.Node) {
	why := mod.name + " failed: its item stays as last recorded"
	if mod.unparsed {
		why = "the plan of " + mod.name + " does not parse: its item stays as last recorded"
	}
	hold := func(c string) *graph.Node {
		n := m.derived(itemKey(mod.name, c), func(graph.In) (any, error) { return nil, graph.Wait("%s", why) },
			nil, &Origin{Module: mod.name, Collection: c})
		mod.items = append(mod.items, n)
		mod.owning[n] = true
		return n
	}
	held := map[string]bool{}
	for _, n := range old {
		c := n.Meta.(*Origin).Collection
		_, kept := m.itemsKept[n]
		if _, before := mod.itemsBefore[c]; !kept && !before {
			continue // never had a text, in this run or the last: nothing recorded to hold
		}
		if !n.Removed() && !held[c] {
			// An item never computed (its plan parsed in the start's
			// snapshot, then broke before the first fill) has no text
			// kept: the last run's stands for it.
			h := hold(c)
			if t, ok := mod.itemsBefore[c]; ok {
				if _, kept := m.itemsKept[h]; !kept {
					m.itemsKept[h] = t
				}
			}
			held[c] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(mod.itemsBefore)) {
		if !held[c] {
			m.itemsKept[hold(c)] = mod.itemsBefore[c]
		}
	}
}

// ItemsBefore hands over what the last run recorded in the collect bucket
// for this node's modules (module → collection → text, the start's Sweep).
// A module whose plan is refused (its value does not parse, or it breaks
// a rule) or that failed already (a template that does not parse, a path
// clash) holds those items (holdItems); one whose plan parses has each of its items stand as recorded while it waits
// without having been ready in this run (recordedBefore). Only before the
// first stabilization, like HeldBefore.
func (m *NodeGraph) ItemsBefore(items map[string]map[string][]byte) {
	if m.claims.started {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(items)) {
		mod := m.mods[name]
		switch {
		case mod == nil:
		case mod.asg == nil || mod.plan != nil && mod.plan.State() == graph.Failed:
			// Its plan refused, or one that parses failed already (a
			// template of a cached archive that does not parse, a path
			// another module holds): held as recorded. Before, only a
			// value that does not parse held them; the others had no
			// item node to keep a text on, and a restart deleted the item
			// and rewrote its collectors (an outside audit).
			mod.itemsBefore = items[name]
			m.rebuild(mod)
		default:
			m.recordedBefore(mod, items[name])
		}
	}
}

// recordedBefore gives each item of mod's plan the text the last run
// recorded for it (recorded: collection → text), as the text it last had
// (itemsKept): while the item waits in this run without having been
// ready (its config key or binding went while the client was down, its
// archive is still fetched), it is still recorded in the collect bucket
// (a waiting item's record stays), so its collectors have it as recorded
// (SPEC §4.4: every item recorded), as they do when an item waits while
// the client runs. Without it, a restart rewrote every collector's file
// without the item (restarting its program) and again once the item was
// ready, the bucket holding it all along. A ready item is its own text; a
// failed one is left out (and deleted) as before.
func (m *NodeGraph) recordedBefore(mod *module, recorded map[string][]byte) {
	for _, n := range mod.items {
		if _, kept := m.itemsKept[n]; kept {
			continue
		}
		if t, ok := recorded[n.Meta.(*Origin).Collection]; ok {
			m.itemsKept[n] = t
		}
	}
}

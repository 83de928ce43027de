package nodes

import (
	"maps"
	"slices"
)

// While an assignment's value does not parse, the bindings and offers of
// its last value that parsed stand (keepBindings). They live in memory, so
// a client started again on such a value had none: it dropped the consumer
// from its provider's ${consumers:X} (the provider's file rewritten, its
// program restarted: one broken plan touching another module, against
// SPEC §3), and the provider's consumers went waiting. Items do not have
// this problem: the collect bucket holds them (ItemsBefore).
//
// So what is kept is handed out (KeptPlans) for the client to keep across
// its restarts (its --state-dir), and handed back at start (PlansBefore)
// before the assignments bucket is read. Why the state dir and not the
// bucket's history: the assignments bucket is the controller's (the lab
// makes it; SPEC §2.2), its history setting is not ours to count on (one
// kept revision is JetStream's default, and the client's account may not
// read history), while the state dir is the client's alone and already
// keeps what a restart must not forget (removals.json).
//
// A KeptPlan holds names only (providers, provisions, locals) and the
// offers a plan makes in the assignments bucket every client reads: never
// a secret's value (those are the vault's, SPEC §4.2).

// KeptPlan is what an assignment whose value does not parse still binds
// and offers: its last value that parsed's.
type KeptPlan struct {
	Provisions []KeptBinding `json:"provisions,omitempty"`
	// Offered: its provides were read (a plan that offers nothing offers
	// too); Provides is what they said.
	Offered  bool    `json:"offered,omitempty"`
	Provides []Offer `json:"provides,omitempty"`
}

// KeptBinding is one provisions entry as far as it binds a consumer.
type KeptBinding struct {
	Provider  string `json:"provider"`
	Provision string `json:"provision"`
	Local     string `json:"local,omitempty"`
}

// PlansBefore hands over what the last run kept (KeptPlans), by
// assignment key. A key whose first value this run does not parse binds
// and offers as kept; one read that parses, or not read by the first
// stabilization (deleted meanwhile), forgets it. Only before the first
// stabilization, like ItemsBefore.
func (m *NodeGraph) PlansBefore(kept map[string]KeptPlan) {
	if m.claims.started || len(kept) == 0 {
		return
	}
	m.plansBefore = kept
}

// KeptPlans says, when it moved since it was last taken, what every
// assignment whose value does not parse still binds and offers (ok false:
// nothing moved). Read after a stabilization: the keys not read by the
// first are forgotten then.
func (m *NodeGraph) KeptPlans() (map[string]KeptPlan, bool) {
	if !m.keptMoved {
		return nil, false
	}
	m.keptMoved = false
	out := map[string]KeptPlan{}
	for _, key := range slices.Sorted(maps.Keys(m.unparsedKeys)) {
		var k KeptPlan
		if a := m.assignments[key]; a != nil {
			for _, p := range a.binds {
				k.Provisions = append(k.Provisions, KeptBinding{Provider: p.provider, Provision: p.provision, Local: p.local})
			}
		}
		module := m.unparsedKeys[key]
		if at, ok := m.offerKeys[module][key]; ok && at.err == "" {
			k.Offered, k.Provides = true, at.provides
		}
		if len(k.Provisions) > 0 || k.Offered {
			out[key] = k
		}
	}
	return out, true
}

// noteUnparsed records whether assignment key's value (of module on node)
// parses. One that does not, with nothing kept of it in this run, binds and
// offers as the last run kept (PlansBefore).
func (m *NodeGraph) noteUnparsed(key, node, module string, unparsed bool) {
	kept, had := m.plansBefore[key]
	delete(m.plansBefore, key)
	if _, was := m.unparsedKeys[key]; was || unparsed {
		m.keptMoved = true
	}
	if !unparsed {
		delete(m.unparsedKeys, key)
		return
	}
	m.unparsedKeys[key] = module
	if !had {
		return
	}
	if m.assignments[key] == nil && len(kept.Provisions) > 0 {
		a := &Assignment{Node: node, Module: module}
		for _, b := range kept.Provisions {
			a.Provisioning.Provisions = append(a.Provisioning.Provisions,
				ProvisionSpec{Provider: b.Provider, Provision: b.Provision, Local: b.Local})
		}
		m.index(key, a)
	}
	if kept.Offered && !m.offered(key, module) {
		m.noteOffers(key, module, kept.Provides, "")
	}
}

// forgetUnparsed records that assignment key is gone.
func (m *NodeGraph) forgetUnparsed(key string) {
	delete(m.plansBefore, key)
	if _, was := m.unparsedKeys[key]; was {
		delete(m.unparsedKeys, key)
		m.keptMoved = true
	}
}

// firstStabilization forgets what the last run kept of keys this run has
// not read (deleted while the client was down), and has KeptPlans say what
// is kept now.
func (m *NodeGraph) firstStabilization() {
	m.plansBefore = nil
	m.keptMoved = true
}

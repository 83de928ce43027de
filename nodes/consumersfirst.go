package nodes

import (
	"time"

	"github.com/novox/mesh-provisioner/graph"
)

// FirstConsumersWait bounds how long a consumers list's first value waits
// for the vault's first answers (firstRoundOpen): the SPEC's 5 s in which
// the vault answers an ask or the consumer is left out (§4.2, §4.5).
const FirstConsumersWait = 5 * time.Second

// firstRoundWhy is what a consumers list says while its first value waits
// for the vault's first answers. It does not move as they come in, so the
// need that reads the list is written once (SPEC §5.2), not per answer.
const firstRoundWhy = "waiting for the vault's first answer to each consumer's credential (at most 5s)"

// computeConsumers is computeConsumersList held, for the list's first
// value, until every consumer's credential asked has had its first answer
// from the vault (sealed, absent, refused, or no reply within the ask's
// timeout), or FirstConsumersWait passed.
//
// Without it, a provider with many consumers was filled again for every
// batch of answers as its consumers' credentials first came in (the loop
// stabilises per batch): 92 fills of one file at 2,019 consumers, and
// with on_change restart as many restarts of the provider's program in
// its first seconds. Once the list has a value, each change flows at
// once, as before: one binding asks the vault once and fills once when
// its answer comes; the check below is then one comparison.
//
// A consumer left out of that first value (absent, refused, silent) is
// added when the vault hands its credential later, like a new binding.
func (m *NodeGraph) computeConsumers(in graph.In) (any, error) {
	if self := in.Node(); self.State() != graph.Ready && in.State(0) == graph.Ready && m.firstRoundOpen(in, self) {
		return nil, graph.Wait(firstRoundWhy)
	}
	return computeConsumersList(in)
}

// firstRoundOpen says whether some consumer's credential (input i+1 for
// binding i) has had no answer from the vault yet, since this run made
// its leaf, and FirstConsumersWait has not passed since the list began
// to wait for them. A credential's answer is recorded in m.secrets
// whatever it was (a silence too: its ask timed out); a pair/ name's entry
// goes with its leaf (collect), so a leaf made again waits again.
func (m *NodeGraph) firstRoundOpen(in graph.In, self *graph.Node) bool {
	if self.Why() == firstRoundWhy && m.g.Now().Sub(self.Since()) >= FirstConsumersWait {
		return false
	}
	bindings, _ := in.Value(0).([]Binding)
	for i, b := range bindings {
		if i+1 >= in.Len() || in.State(i+1) == graph.Ready {
			continue
		}
		if _, answered := m.secrets[b.Credential]; !answered {
			return true
		}
	}
	return false
}

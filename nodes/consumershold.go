package nodes

import (
	"strconv"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/graph"
)

// FirstConsumersWait bounds how long a consumers list waits for the
// vault's answers before it is filled with those it has: the SPEC's 5 s in
// which the vault answers an ask or the consumer is left out (§4.2, §4.5).
const FirstConsumersWait = 5 * time.Second

// firstRoundWhy is what a consumers list says while its first value waits
// for the vault's first answers. It does not move as they come in, so the
// need that reads the list is written once (SPEC §5.2), not per answer.
const firstRoundWhy = "waiting for the vault's first answer to each consumer's credential (at most 5s)"

// consumersHold is what holds consumers lists back while the vault's
// answers for their credentials come in, so that each is filled once for
// a round of asks rather than once per batch of answers (the loop
// stabilises per batch).
type consumersHold struct {
	// first: provider/provision → when its list's first value began to
	// wait; released: those ReleaseDue let go after FirstConsumersWait,
	// until their list computes.
	first    map[string]time.Time
	released map[string]bool
	// round: the re-ask of every name after the bus came back, while
	// some credential a list reads has not been answered again.
	round *reaskRound
}

type reaskRound struct {
	until   time.Time
	pending map[string]bool // pair/ names not answered since the bus came back
}

// computeConsumers is computeConsumersList held while the vault's answers
// for the list's credentials come in.
//
// The list's first value waits until every consumer's credential has had
// an answer from the vault itself (sealed, absent, refused), or
// FirstConsumersWait passed since the vault first answered one of them (a
// vault that answers for some names and not others, ReleaseDue). Without
// it, a provider with many consumers was filled again for every batch of
// answers as its consumers' credentials first came in: 92 fills of one
// file at 2,019 consumers, and with on_change restart as many restarts of
// the provider's program in its first seconds.
//
// While the vault has answered none of the list's credentials (asks made,
// no reply: the vault down), the list waits for as long as that lasts,
// saying so (vaultSilentWhy): the vault not answering is no answer that
// a consumer is not held (SPEC §4.2, §4.5), and a list filled without
// them rewrote a provider's consumers file empty and restarted its program
// because its client restarted while the vault was unreachable.
//
// After the bus came back (ReaskRound), a list keeps its value until every
// credential it reads has been answered again, or the round's time is up:
// credentials rotated while the bus was away (their secret-changed lost)
// reach the list in one fill, not one per batch of the spread re-asks.
//
// Otherwise each change flows at once, as before: one binding asks the
// vault once and fills once when its answer comes; what is added here is
// then a comparison or two, no timer and no goroutine.
func (m *NodeGraph) computeConsumers(in graph.In) (any, error) {
	self := in.Node()
	switch {
	case in.State(0) != graph.Ready:
	case self.State() != graph.Ready:
		if why := m.firstRoundOpen(in, self.Key().Name); why != "" {
			return nil, graph.Wait("%s", why)
		}
		delete(m.consumersHeld.first, self.Key().Name)
	case m.consumersHeld.round != nil && m.heldByRound(in):
		return self.Value(), nil // cut off: nothing below moves
	case m.boundAwaitsVault(in, self.Key().Name):
		return self.Value(), nil
	}
	return computeConsumersList(in)
}

// boundAwaitsVault says a list that has a value keeps it while a consumer
// bound since waits for its credential's first ask to come back (the
// vault's answer, or none within its 5 s), at most FirstConsumersWait
// (ReleaseDue): one change of the assignments that
// unbinds a consumer and binds another (a consumer's local changed, a
// consumer moved to another node) is then one fill, from the old list
// straight to the new. Before, the list without either was filled at
// once and the new one ms later, when the vault answered: the provider's
// program restarted twice and the moved consumer was out of its file in
// between (an outside audit). A consumer added alone costs nothing more
// (the list without it is the one held).
func (m *NodeGraph) boundAwaitsVault(in graph.In, pk string) bool {
	h := &m.consumersHeld
	if h.released[pk] {
		delete(h.released, pk)
		return false
	}
	bindings, _ := in.Value(0).([]Binding)
	for i, b := range bindings {
		if i+1 >= in.Len() || in.State(i+1) == graph.Ready {
			continue
		}
		if _, known := m.secrets[b.Credential]; known {
			continue // its first ask came back (an answer, or none within the vault's 5 s): nothing more to wait for
		}
		if _, held := h.first[pk]; !held {
			if h.first == nil {
				h.first = map[string]time.Time{}
			}
			h.first[pk] = m.g.Now()
		}
		return true
	}
	delete(h.first, pk)
	return false
}

// firstRoundOpen says why list pk's first value still waits ("" when it
// does not): some consumer's credential (input i+1 for binding i) has had
// no answer from the vault itself yet, and either the vault answered
// none of them (the list waits with no time limit: vaultSilentWhy; or,
// none asked yet, firstRoundWhy) or FirstConsumersWait has not passed
// since the vault first answered one (it records when: the ask of the
// earliest answer). A pair/ name's
// answer is kept while its binding stands (pairHeldFor), so a list made
// again has what the vault last said of it.
func (m *NodeGraph) firstRoundOpen(in graph.In, pk string) string {
	if m.consumersHeld.released[pk] {
		delete(m.consumersHeld.released, pk)
		return ""
	}
	bindings, _ := in.Value(0).([]Binding)
	answered, silent := false, false // silent: one asked and not answered
	var open [3]string               // the first credentials not answered, in list order
	n := 0                           // how many are not
	var firstAsk time.Time           // the earliest ask of those answered
	for i, b := range bindings {
		s, asked := m.secrets[b.Credential]
		if s.answered {
			answered = true
			if firstAsk.IsZero() || s.asked.Before(firstAsk) {
				firstAsk = s.asked
			}
		}
		if i+1 >= in.Len() || in.State(i+1) == graph.Ready || s.answered {
			continue
		}
		if n < len(open) {
			open[n] = b.Credential
		}
		n++
		silent = silent || asked
	}
	switch {
	case n == 0:
		return ""
	case !answered:
		delete(m.consumersHeld.first, pk) // no time limit: waited for
		if !silent {
			return firstRoundWhy
		}
		return vaultSilentWhy(open[:min(n, len(open))], n)
	}
	since, waiting := m.consumersHeld.first[pk]
	if !waiting {
		// From the vault's first answer, not from this look: a client
		// started again asks while its first fill waits (up to 5 s) for
		// the answers, and counting from here held a provider with one
		// credential the vault left silent 5 s more, reported waiting
		// with no files at every restart (an outside audit).
		since = m.g.Now()
		if !firstAsk.IsZero() && firstAsk.Before(since) {
			since = firstAsk
		}
		if m.consumersHeld.first == nil {
			m.consumersHeld.first = map[string]time.Time{}
		}
		m.consumersHeld.first[pk] = since
	}
	if m.g.Now().Sub(since) >= FirstConsumersWait {
		return "" // waited for long enough: made of those it holds
	}
	return firstRoundWhy
}

// vaultSilentWhy is what a consumers list says while the vault has given
// no answer for any of its credentials (all of them): the names of the
// first (never a value) and how many more, so explain and the report point at the
// vault. It does not move as the unanswered asks come back one by one, so
// the need is written once for the vault's silence (SPEC §5.2).
func vaultSilentWhy(first []string, all int) string {
	list := strings.Join(first, ", ")
	if more := all - len(first); more > 0 {
		list += " and " + strconv.Itoa(more) + " more"
	}
	return "the vault has given no answer (sealed, absent or refused) for any consumer's credential (" + list +
		"): the list waits for it"
}

// heldByRound says whether a credential the list reads is still to be
// answered again in the re-ask round.
func (m *NodeGraph) heldByRound(in graph.In) bool {
	bindings, _ := in.Value(0).([]Binding)
	for _, b := range bindings {
		if m.consumersHeld.round.pending[b.Credential] {
			return true
		}
	}
	return false
}

// ReaskRound says the bus came back and every vault name read is being
// asked again, answers expected by until (the re-asks' spread and the
// vault's 5 s): each consumers list that has a value keeps it until every
// credential it reads is answered again (or until passes: ReleaseDue),
// then is filled once.
func (m *NodeGraph) ReaskRound(until time.Time) {
	pending := map[string]bool{}
	for pk := range m.bindings {
		c := m.existing(KindConsumers, pk)
		if c == nil || c.State() != graph.Ready {
			continue // a list without a value yet waits for its first answers
		}
		for _, in := range c.Inputs()[1:] {
			pending[in.Key().Name] = true
		}
	}
	if len(pending) == 0 {
		m.consumersHeld.round = nil
		return
	}
	m.consumersHeld.round = &reaskRound{until: until, pending: pending}
}

// consumerAnswered notes the vault's own answer for name (setSecret).
func (m *NodeGraph) consumerAnswered(name string) {
	r := m.consumersHeld.round
	if r == nil || !r.pending[name] {
		return
	}
	delete(r.pending, name)
	if len(r.pending) == 0 {
		m.endRound()
	}
}

// endRound ends the re-ask round: every list computes again.
func (m *NodeGraph) endRound() {
	m.consumersHeld.round = nil
	for pk := range m.bindings {
		if c := m.existing(KindConsumers, pk); c != nil {
			m.g.SetCompute(c, m.computeConsumers)
		}
	}
}

// ReleaseDue lets go the lists held longer than they may be at now: those
// whose first value waited FirstConsumersWait, and every one once the
// re-ask round's time is up. No timer runs for them: the caller calls it
// before each stabilisation, and keeps its retry tick going while
// ConsumersHeld. It costs two comparisons when no list is held.
func (m *NodeGraph) ReleaseDue(now time.Time) {
	if r := m.consumersHeld.round; r != nil && !now.Before(r.until) {
		m.endRound()
	}
	for pk, since := range m.consumersHeld.first {
		c := m.existing(KindConsumers, pk)
		switch {
		case c == nil:
			delete(m.consumersHeld.first, pk)
		case now.Sub(since) >= FirstConsumersWait:
			delete(m.consumersHeld.first, pk)
			if m.consumersHeld.released == nil {
				m.consumersHeld.released = map[string]bool{}
			}
			m.consumersHeld.released[pk] = true // until its compute, next
			m.g.SetCompute(c, m.computeConsumers)
		}
	}
}

// ConsumersHeld says whether a consumers list is held for the vault's
// answers (ReleaseDue is to be called again later).
func (m *NodeGraph) ConsumersHeld() bool {
	return m.consumersHeld.round != nil || len(m.consumersHeld.first) > 0
}

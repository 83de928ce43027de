package server

import (
	"github.com/nats-io/nats.go/jetstream"
)

// ownerPlan answers a module's own wait: the controller publishes the
// plan and the templates archive it names.
const ownerPlan = "mesh-controller"

// kindModule is the kind of a module's own wait in its report (the stage's
// waitingOf): no need waits, the module does (its templates archive).
const kindModule = "module"

// moduleWait judges a waiting report's own waits (kind "module"): with
// every need met, or none known before its archive is read, nothing else
// names the module, so a plan whose archive never came stood for ever
// without a finding and the sweep exited 0. Such a wait is judged as a
// need is, by the report's last change (a report is written only when it
// differs), and grouped with the same wait on other nodes. It is counted
// in StoodModules when it stood asked, not among the needs.
func (s *sweeper) moduleWait(e jetstream.KeyValueEntry, node, module string, v reportValue) {
	if v.State != "waiting" {
		return
	}
	for _, w := range v.Waiting {
		if w.Kind != kindModule {
			continue
		}
		verdict := VerdictWaiting
		if s.now.Sub(e.Created()) > s.p.StoodAfter {
			verdict = VerdictStoodAsked
			s.res.reply.Summary.StoodModules++
		}
		s.res.needs[needLabels{metricVerdict(verdict), kindModule, ownerPlan}]++
		s.group(groupKey{verdict, ownerPlan, kindModule, module, sharedWhy(w.Why, node, module)}, e, w.Why, node, module)
	}
}

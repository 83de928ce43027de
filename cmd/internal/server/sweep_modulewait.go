package server

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
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
		kind, name, owner := kindModule, module, ownerPlan
		if w.Kind != kindModule {
			if !s.waitUnrecorded(node, module, w.Kind, w.Name) {
				continue // judged as its need
			}
			kind, name = w.Kind, w.Name
			owner = s.owner(kind, name, w.Why, node, module)
		}
		verdict := VerdictWaiting
		stood := s.now.Sub(e.Created()) > s.p.StoodAfter
		if stood {
			verdict = VerdictStoodAsked
		}
		switch n := &s.res.reply.Summary.Needs; {
		case kind == kindModule && stood:
			s.res.reply.Summary.StoodModules++
		case kind == kindModule:
		case stood: // counted as the need it stands for
			n.StoodAsked++
		default:
			n.Waiting++
		}
		s.res.needs[needLabels{metricVerdict(verdict), s.kindLabelOr(kind), ownerLabel(owner)}]++
		s.group(groupKey{verdict, owner, kind, name, sharedWhy(w.Why, node, module)}, e, w.Why, node, module)
	}
}

// waitUnrecorded says whether a waiting report's wait of kind and name
// has no need in the needs bucket to be judged by: a secret the plan
// declares without a path and no template names (SPEC §5.2 records
// placeholders; the module waits for it all the same). Unjudged, such a
// module stood waiting for ever with the sweep exiting 0 (an outside
// audit). The needs bucket not read (missing, refused): every wait is
// judged by its need, as before.
func (s *sweeper) waitUnrecorded(node, module, kind, name string) bool {
	if s.needKeys == nil {
		return false
	}
	_, recorded := s.needKeys[spec.EncodeKey(node, module, kind, name)]
	return !recorded
}

// kindLabelOr is kind as mesh_provisioner_needs labels it, a module's own
// wait included.
func (s *sweeper) kindLabelOr(kind string) string {
	if kind == kindModule {
		return kindModule
	}
	return s.kindLabel(kind)
}

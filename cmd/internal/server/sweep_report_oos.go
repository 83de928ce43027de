package server

import (
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// reportStateOutOfShape is the state mesh_provisioner_modules counts a
// module under whose report is out of shape (checkReport: not JSON, a
// state SPEC §5.3 does not name, a node or module other than its key's).
// Its own state, not no_report's: its node's client is up (it wrote the
// report), so an operator sent to a node gone quiet (the
// MeshModulesWithoutReport alert) would look at the wrong thing; the
// sweep's out-of-shape finding names the key to look at instead. So
// applied, waiting, failed, removed and out_of_shape sum to the sweep's
// summary.modules, as before without it.
const reportStateOutOfShape = "out_of_shape"

// reportOutOfShape counts e, the report of node/module (assigned, or the
// assignments not known) whose value is out of shape, as a module: before,
// it counted nowhere (neither among the modules nor without a report), so
// a node whose one module wrote garbage swept as a node with no module
// assigned, exit 0. It is held back as a module without a report is once
// its report has stood longer than stood_after (its since is the key's
// time); the report is also a finding "out of shape" of its own.
func (s *sweeper) reportOutOfShape(e jetstream.KeyValueEntry, why string) {
	s.outOfShape(spec.AppliedBucket, e, why)
	sum := &s.res.reply.Summary
	sum.Modules++
	sum.ReportOutOfShape++
	s.res.modules[reportStateOutOfShape]++
	if s.now.Sub(e.Created()) > s.p.StoodAfter {
		sum.ReportOutOfShapeStood++
	}
}

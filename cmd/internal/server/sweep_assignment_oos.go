package server

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// assignmentOutOfShape says an assignments key out of shape (SPEC §2.1:
// why) as a finding "out of shape" owned by the controller, when its value
// carries a plan: a module meant for a node that no client will provision
// (its own client warns of it in its log alone). A key whose value carries
// no plan, or is not JSON, is not known to be the provisioner's and is
// left out, as the clients ignore such a value. A narrowed sweep says it
// when its raw tokens bear the narrowing's names where a module's keys
// would (a node token out of shape bears no node's).
func (s *sweeper) assignmentOutOfShape(e jetstream.KeyValueEntry, why string) {
	var v struct {
		Provisioning json.RawMessage `json:"provisioning"`
	}
	if json.Unmarshal(e.Value(), &v) != nil || (len(v.Provisioning) == 0 || string(v.Provisioning) == "null") && !spec.NamesAPlan(e.Value()) {
		return
	}
	if s.p.Node != "" || s.p.Module != "" {
		narrow, err := narrowing(Request{What: "applied", Node: s.p.Node, Module: s.p.Module})
		if err != nil || !selected(strings.Split(e.Key(), "."), narrow) {
			return
		}
	}
	s.oos = append(s.oos, Finding{Verdict: VerdictOutOfShape, Owner: ownerPlan, Bucket: spec.AssignmentsBucket, Key: e.Key(),
		Why: why, Since: e.Created().UTC().Format(time.RFC3339), Count: 1, Needs: []NodeModule{}})
}

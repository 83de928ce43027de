package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A consumer's plan replaced by a value that does not parse fails that
// module alone (SPEC §3: "the other modules are untouched"): the provider's
// consumers file keeps the consumer its last plan bound, so the provider
// is neither refilled nor restarted and the consumer's running program
// keeps its credential while its plan is being fixed. Before, the consumer
// was dropped from the list at once (on its own node and on any other),
// the provider's file rewritten without it; fixed, all is as before with
// no restart. A value that carries no plan, or a key deleted, unbinds.
func TestAConsumersPlanThatDoesNotParseLeavesTheProvidersConsumersAlone(t *testing.T) {
	m := newMesh(t)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte("p1"))
	v.Set(t.Context(), pair("ace", "dd", ""), []byte("p2"))
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	m.assign("ace", "dd", consumerPlan(), nil)
	m.client("ace")
	both := []string{pair("ace", "dd", ""), pair("g14", "cc", "")}
	m.waitConsumers("/etc/gitea/consumers.json", both...)
	m.waitState("ace", "gitea", "applied")
	m.settle()
	from := m.fills.count()

	good, _ := m.get(spec.AssignmentsBucket, "g14.cc")
	m.put(spec.AssignmentsBucket, "g14.cc", `{"provisioning":{"provisions":[{`)
	m.put(spec.AssignmentsBucket, "ace.dd", `{"provisioning":{"provisions":[{"provider":5}]}}`)
	m.waitFailed("ace", "dd", "assignment JSON does not parse")
	m.settle()
	m.waitConsumers("/etc/gitea/consumers.json", both...)
	for _, r := range m.fills.requests("gitea", from) {
		t.Errorf("the provider was filled again while a consumer's plan was broken: %v", r.Files)
	}
	m.waitState("ace", "gitea", "applied")

	// Fixed: nothing of the provider moves.
	m.put(spec.AssignmentsBucket, "g14.cc", good)
	m.assign("ace", "dd", consumerPlan(), nil)
	m.waitState("ace", "dd", "applied")
	m.settle()
	for _, r := range m.fills.requests("gitea", from) {
		t.Errorf("the provider was filled again once the plan was fixed: %v", r.Files)
	}

	// A value that is not the provisioner's, and a key deleted, unbind.
	m.put(spec.AssignmentsBucket, "g14.cc", `{"node":"g14","module":"cc"}`)
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "dd", ""))
	m.put(spec.AssignmentsBucket, "ace.dd", `{"provisioning":{"provisions":[{`)
	m.del(spec.AssignmentsBucket, "ace.dd")
	m.waitConsumers("/etc/gitea/consumers.json")
}

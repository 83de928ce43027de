package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
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

// A provider's plan replaced by a value that does not parse fails the
// provider alone: its consumers' bindings are judged by its last offers
// that parsed, so a consumer stays applied with its files as they were.
// Before, every consumer went waiting ("provider gitea's plan … is
// refused"), on any node. A provider whose first value does not parse
// has no offers to judge by: its consumers wait, saying why.
func TestAProvidersPlanThatDoesNotParseLeavesItsConsumersAlone(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.boundConsumer() // gitea on novox, cc on ace
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"u","url":"h"}}`)
	events := m.appliedEvents("ace")
	m.client("ace")
	m.waitFile("/etc/cc/forge.toml", "user = u\nurl = h\n")
	m.waitState("ace", "cc", "applied")
	m.settle()

	// gitea on ace too (the first in byte order, its offers the ones read),
	// then both its plans broken: on another node and on this one.
	m.provider("ace", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.waitState("ace", "gitea", "applied")
	m.settle()
	from, seen := m.fills.count(), len(events())
	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[`)
	m.put(spec.AssignmentsBucket, "ace.gitea", `{"provisioning":{"provides":[{"provision":5}]}}`)
	m.waitFailed("ace", "gitea", "assignment JSON does not parse")
	m.settle()
	if r, _ := m.report("ace", "cc"); r["state"] != "applied" {
		t.Errorf("the consumer is %v while its provider's plan does not parse", r)
	}
	for _, s := range events()[seen:] {
		if s != "prov.applied.ace.gitea" {
			t.Errorf("event %s while a provider's plan does not parse", s)
		}
	}
	if got := m.fills.since(from); len(got) > 0 {
		t.Errorf("filled %v while a provider's plan does not parse", got)
	}

	// The provider's value that does not parse is the first it has: no
	// offer to judge by, the consumer waits saying why.
	m.del(spec.AssignmentsBucket, "ace.gitea")
	m.waitGone(spec.AppliedBucket, "ace.gitea")
	m.del(spec.AssignmentsBucket, "novox.gitea")
	m.waitWaiting("ace", "cc", "provider gitea is assigned nowhere yet")
	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[`)
	m.waitWaiting("ace", "cc", "provider gitea's plan", "is refused")
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.waitState("ace", "cc", "applied")
}

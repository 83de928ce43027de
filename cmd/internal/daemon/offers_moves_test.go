package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A binding follows its offer's judgement as the provider's plan moves it
// (SPEC §4.6 r2): judged by its have, then by the entry its helper writes
// (the provider's bucket, not watched while the have decided, is read
// then), by its have again, by the entry when no offer names a helper,
// and waited for when the provider leaves every node.
func TestABindingFollowsItsOfferAsTheProvidersPlanMovesIt(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry"}}`)
	haveOffer := nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://have"}}
	m.provider("novox", "gitea", helperOffer, haveOffer)
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	m.waitFile("/etc/cc/forge", "url = https://have\n")

	helped := haveOffer
	helped.AnsweredBy = nodes.AnsweredByHelper
	m.provider("novox", "gitea", helperOffer, helped)
	m.waitFile("/etc/cc/forge", "url = https://entry\n")

	m.provider("novox", "gitea", helperOffer, haveOffer)
	m.waitFile("/etc/cc/forge", "url = https://have\n")

	m.provider("novox", "gitea", nodes.Offer{Provision: "forge-account"}, haveOffer) // no helper named
	m.waitFile("/etc/cc/forge", "url = https://entry\n")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry-2"}}`)
	m.waitFile("/etc/cc/forge", "url = https://entry-2\n")
	m.waitState("ace", "cc", "applied")

	m.del(spec.AssignmentsBucket, "novox.gitea")
	m.waitWaiting("ace", "cc", "provider gitea is assigned nowhere yet")
	m.provider("novox", "gitea", helperOffer, haveOffer)
	m.waitFile("/etc/cc/forge", "url = https://have\n")
	m.waitState("ace", "cc", "applied")
}

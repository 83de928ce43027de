package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider assigned somewhere whose plan's provides are refused (an
// offer listed twice) holds its consumers' bindings waiting (no offer of it
// is known to judge them by), and graph explain says why at each line of
// the chain: the offer's line does not say the provider is assigned
// nowhere, as it did, beside the provider's key and its refusal.
func TestAProvidersRefusedPlanIsNotExplainedAsAssignedNowhere(t *testing.T) {
	m := newMesh(t)
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitWaiting("ace", "cc", "provider gitea is assigned nowhere yet")
	if _, text := explainOf(t, sock, "cc"); !contains(text, "gitea's offer gitea-read: not known (provider gitea is assigned nowhere yet)") {
		t.Fatalf("explain of a provider assigned nowhere:\n%s", text)
	}

	m.put(spec.AssignmentsBucket, "novox.gitea", `{"provisioning":{"provides":[{"provision":"gitea-read"},{"provision":"gitea-read"}]}}`)
	m.waitWaiting("ace", "cc", "provider gitea's plan (mesh-controller_assignments novox.gitea) is refused")
	_, text := explainOf(t, sock, "cc")
	t.Logf("explain:\n%s", text)
	if !contains(text, "gitea's offer gitea-read (mesh-controller_assignments novox.gitea): not known (provider gitea's plan is refused)") {
		t.Errorf("explain does not say the provider's plan is refused at the offer:\n%s", text)
	}
	if contains(text, "assigned nowhere") {
		t.Errorf("explain says a provider assigned on novox is assigned nowhere:\n%s", text)
	}

	// Its plan fixed: the binding is judged by it.
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://have"}},
		nodes.Offer{Provision: "forge-account", AnsweredBy: nodes.AnsweredByHelper})
	m.waitFile("/etc/cc/forge", "url = https://have\n")
	m.waitState("ace", "cc", "applied")
}

package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.6 r2: a binding is judged by who answers the provider's offer.

var (
	helperOffer = nodes.Offer{Provision: "forge-account", AnsweredBy: nodes.AnsweredByHelper}
	refusedRead = `{"state":"refused","reason":"gitea does not serve gitea-read"}`
)

// urlConsumer: cc on ace writes /etc/cc/forge from gitea's gitea-read.
func (m *mesh) urlConsumer(tmpl string) {
	m.t.Helper()
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/forge", Template: "forge"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"forge": tmpl})
}

// needSays waits for the needs bucket's entry of node.module's need to be
// in state with a why holding says.
func (m *mesh) needSays(node, module, kind, name, state, says string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		v, ok := m.get(spec.NeedsBucket, spec.EncodeKey(node, module, kind, name))
		if !ok {
			return fmt.Errorf("no need %s.%s %s %s", node, module, kind, name)
		}
		var n struct{ State, Why string }
		json.Unmarshal([]byte(v), &n)
		if n.State != state || !strings.Contains(n.Why, says) {
			return fmt.Errorf("need %s, want %s saying %q", v, state, says)
		}
		return nil
	})
}

func (m *mesh) waitFailed(node, module, says string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report(node, module)
		if r["state"] != "failed" || !contains(fmt.Sprint(r["reason"]), says) {
			return fmt.Errorf("report %v, want failed saying %q", r, says)
		}
		return nil
	})
}

// withEntry: gitea_bound holds a bound entry for cc's gitea-read, gitea
// offers offers (assigned nowhere when none), and ace's client runs.
func withEntry(t *testing.T, offers ...nodes.Offer) *mesh {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry"}}`)
	if len(offers) > 0 {
		m.provider("novox", "gitea", offers...)
	}
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	return m
}

func TestAProviderAssignedNowhereIsWaitedForEvenWithAnEntry(t *testing.T) {
	m := withEntry(t)

	m.waitWaiting("ace", "cc", "provider gitea is assigned nowhere yet")
	m.needSays("ace", "cc", "bound", "gitea-read:url", "waiting", "provider gitea is assigned nowhere yet")
	if _, _, err := m.file("/etc/cc/forge"); err == nil {
		t.Fatal("a binding was taken from an entry while its provider is assigned nowhere")
	}
	// gitea is assigned (on another node): its plain offer lets the entry decide.
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.waitFile("/etc/cc/forge", "url = https://entry\n")
	m.waitState("ace", "cc", "applied")
	// Taken off every node: waited for again.
	m.del(spec.AssignmentsBucket, "novox.gitea")
	m.waitWaiting("ace", "cc", "provider gitea is assigned nowhere yet")
}

func TestAProvisionTheProviderDoesNotOfferFailsEvenWithAnEntry(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry"}}`)
	m.provider("novox", "gitea", nodes.Offer{Provision: "forge-account"})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitFailed("ace", "cc", "gitea does not offer gitea-read")
	m.needSays("ace", "cc", "bound", "gitea-read:url", "failed", "gitea does not offer gitea-read")
	if _, _, err := m.file("/etc/cc/forge"); err == nil {
		t.Fatal("a binding to a provision not offered was filled")
	}
	// explain names where the offers were read (SPEC §5.5: the bucket and
	// key at the root), in the words and in --json
	e, text := explainOf(t, sock, "cc")
	t.Logf("explain:\n%s", text)
	if !contains(text, "gitea's offer gitea-read ("+spec.AssignmentsBucket+" novox.gitea): not among gitea's provides") {
		t.Errorf("explain does not name the provider's plan as the root:\n%s", text)
	}
	if b, _ := json.Marshal(e); !strings.Contains(string(b), `"key":"novox.gitea"`) {
		t.Errorf("explain --json does not give the provider's key:\n%s", b)
	}
}

func TestAnOfferItsHelperAnswersIsDecidedByTheEntry(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.provider("novox", "gitea", helperOffer,
		nodes.Offer{Provision: "gitea-read", AnsweredBy: nodes.AnsweredByHelper, Have: map[string]string{"url": "https://have"}})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	m.waitWaiting("ace", "cc", "gitea_bound ace.cc.gitea-read: not written yet")
	m.put("gitea_bound", "ace.cc.gitea-read", refusedRead)
	m.waitFailed("ace", "cc", "refused by the provider: gitea does not serve gitea-read")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry"}}`)
	m.waitFile("/etc/cc/forge", "url = https://entry\n") // the entry's, not the have's
	m.waitState("ace", "cc", "applied")
}

// The sweep's incident (seeds/mesh-provisioner-sweep-commit.txt): gitea's
// helper answers only forge-account and refuses every other bind into
// gitea_bound; claude-code's gitea-read is bound from gitea's have.
func TestAnOfferNoHelperAnswersIsJudgedByItsHaveAlone(t *testing.T) {
	m := newMesh(t)
	m.provider("novox", "gitea", helperOffer,
		nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://forge.mesh.internal"}})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	// No gitea_bound bucket at all: nothing is waited for.
	m.waitFile("/etc/cc/forge", "url = https://forge.mesh.internal\n")
	m.waitState("ace", "cc", "applied")
	_, text := explainOf(t, sock, "cc")
	if !contains(text, "gitea's offer gitea-read (mesh-controller_assignments novox.gitea): judged by its have (no helper answers it)") {
		t.Fatalf("explain does not say how the binding was judged:\n%s", text)
	}

	// The helper refuses the bind into gitea_bound: the have still decides.
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", refusedRead)
	time.Sleep(300 * time.Millisecond)
	m.waitState("ace", "cc", "applied")

	// A key the have lacks fails the module.
	m.urlConsumer("url = ${bound:gitea-read:url}\nas = ${bound:gitea-read:as}\n")
	m.waitFailed("ace", "cc", "gitea's offer gitea-read has no as")
	m.needSays("ace", "cc", "bound", "gitea-read:as", "failed", "gitea's offer gitea-read has no as")

	// The offer moves to its helper: the entry (refused) decides now.
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.waitState("ace", "cc", "applied")
	m.provider("novox", "gitea", helperOffer, nodes.Offer{Provision: "gitea-read", AnsweredBy: nodes.AnsweredByHelper})
	m.waitFailed("ace", "cc", "refused by the provider: gitea does not serve gitea-read")
	_, text = explainOf(t, sock, "cc")
	if !contains(text, "gitea's offer gitea-read (mesh-controller_assignments novox.gitea): answered by its helper (the entry in gitea_bound decides)") {
		t.Fatalf("explain does not say the helper answers:\n%s", text)
	}
}

func TestWithNoHelperNamedTheEntryDecides(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	// An offer object with neither field, and a have no helper makes count.
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://have"}})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	m.waitWaiting("ace", "cc", "gitea_bound ace.cc.gitea-read: not written yet")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://entry"}}`)
	m.waitFile("/etc/cc/forge", "url = https://entry\n")
	m.put("gitea_bound", "ace.cc.gitea-read", refusedRead)
	m.waitFailed("ace", "cc", "refused by the provider: gitea does not serve gitea-read")
}

// The provider's plan read is its first key in byte order: a second
// assignment of the module elsewhere changes nothing.
func TestTheProvidersFirstAssignmentInByteOrderIsRead(t *testing.T) {
	m := newMesh(t)
	m.provider("beta", "gitea", helperOffer, nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://beta"}})
	m.provider("zulu", "gitea", nodes.Offer{Provision: "forge-account"})
	m.urlConsumer("url = ${bound:gitea-read:url}\n")
	m.client("ace")
	m.waitFile("/etc/cc/forge", "url = https://beta\n")
	m.provider("alpha", "gitea", helperOffer, nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://alpha"}})
	m.waitFile("/etc/cc/forge", "url = https://alpha\n")
}

// A change of the provider's offers fills again only the files that read
// the binding whose judgement moved.
func TestAProviderChangeRefillsOnlyTheFilesThatReadIt(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.cc.model", "opus")
	have := func(read, clone string) {
		m.provider("novox", "gitea", helperOffer,
			nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": read}},
			nodes.Offer{Provision: "gitea-clone", Have: map[string]string{"url": clone}})
	}
	have("https://read", "https://clone")
	m.assign("ace", "cc", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/cc/read", Template: "read"}, {Path: "/etc/cc/clone", Template: "clone"},
			{Path: "/etc/cc/model", Template: "model"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"},
			{Provision: "gitea-clone", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"read": "${bound:gitea-read:url}\n", "clone": "${bound:gitea-clone:url}\n", "model": "${config:model}\n"})
	m.client("ace")
	m.waitFile("/etc/cc/read", "https://read\n")
	m.waitFile("/etc/cc/clone", "https://clone\n")
	m.waitState("ace", "cc", "applied")

	from := m.fills.count()
	have("https://read-2", "https://clone") // only gitea-read's have moved
	m.waitFile("/etc/cc/read", "https://read-2\n")
	m.waitState("ace", "cc", "applied")
	if got := m.fills.since(from); strings.Join(got, ",") != "/etc/cc/read" {
		t.Fatalf("a change of gitea-read's have filled %q, want only /etc/cc/read", got)
	}
	// An offer added that nobody reads, then the clone moved: only the clone.
	from = m.fills.count()
	m.provider("novox", "gitea", helperOffer,
		nodes.Offer{Provision: "gitea-read", Have: map[string]string{"url": "https://read-2"}},
		nodes.Offer{Provision: "gitea-clone", Have: map[string]string{"url": "https://clone"}},
		nodes.Offer{Provision: "gitea-admin"})
	have("https://read-2", "https://clone-2")
	m.waitFile("/etc/cc/clone", "https://clone-2\n")
	m.waitState("ace", "cc", "applied")
	if got := m.fills.since(from); strings.Join(got, ",") != "/etc/cc/clone" {
		t.Fatalf("an offer added and gitea-clone's have moved filled %q, want only /etc/cc/clone", got)
	}
	if got, _, _ := m.file(filepath.Join("/etc/cc", "model")); got != "opus\n" {
		t.Fatalf("model %q", got)
	}
}

package devvault_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The vault answers an ask only on an inbox, and among the clients'
// inboxes only on the asking node's: a node's ask whose reply subject was
// mesh-vault.secret-changed had every client of the mesh hear the vault's
// answer as a rotation event, and one naming another node's inbox put the
// answer there (an outside audit). A client's ask on its own inbox is
// answered as ever.
func TestTheVaultAnswersOnlyOnTheAskingNodesInbox(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "app"})
	name := spec.OwnSecretName("app", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	listener := bustest.Connect(t, e.srv)
	var heard atomic.Int32
	for _, subject := range []string{spec.VaultChangedSubject, "_INBOX.provisioner.g14.>"} {
		if _, err := listener.Subscribe(subject, func(*nats.Msg) { heard.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	listener.Flush()
	keys, err := vault.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(vault.Request{Secret: name, Node: "ace", Module: "app", PublicKey: keys.PublicBase64()})
	asker := bustest.Connect(t, e.srv)
	for _, reply := range []string{spec.VaultChangedSubject, "_INBOX.provisioner.g14.x"} {
		m := &nats.Msg{Subject: spec.VaultGetSubject("ace"), Reply: reply, Data: body}
		if err := asker.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	asker.Flush()
	time.Sleep(300 * time.Millisecond)
	if n := heard.Load(); n != 0 {
		t.Fatalf("the vault answered %d asks on a subject not the asking node's inbox", n)
	}
	if !strings.Contains(e.vlog.String(), "vault ask not answered") {
		t.Fatalf("the vault did not say it left them unanswered: %s", e.vlog)
	}

	own := bustest.Connect(t, e.srv, nats.CustomInboxPrefix("_INBOX.provisioner.ace"))
	c := &vault.Client{NC: own, Node: "ace", Keys: keys, Timeout: 2 * time.Second}
	if r := c.Ask(e.ctx, name, "app"); r.Outcome != vault.Sealed || string(r.Value) != "v" {
		t.Fatalf("asked on ace's own inbox: %s", r)
	}
}

// A node's name is one token of its client's inbox as of every subject
// (spec.ClientInbox): node "n.1" had its replies under
// _INBOX.provisioner.n.1, inside node n's inbox space, so an ask of node n
// naming n.1's inbox was answered there (an outside audit). Now n.1's
// inbox is _INBOX.provisioner.n=2E1, n's ask naming it is not answered,
// and n.1's own ask is.
func TestANodeNamedWithADotHasAnInboxOfItsOwn(t *testing.T) {
	e := newEnv(t, true, [2]string{"n", "app"}, [2]string{"n.1", "app"})
	name := spec.OwnSecretName("app", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	if got := spec.ClientInbox("n.1"); got != "_INBOX.provisioner.n=2E1" {
		t.Fatalf("ClientInbox(n.1) = %s", got)
	}
	listener := bustest.Connect(t, e.srv)
	var heard atomic.Int32
	if _, err := listener.Subscribe(spec.ClientInbox("n.1")+".>", func(*nats.Msg) { heard.Add(1) }); err != nil {
		t.Fatal(err)
	}
	listener.Flush()
	keys, err := vault.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(vault.Request{Secret: name, Node: "n", Module: "app", PublicKey: keys.PublicBase64()})
	asker := bustest.Connect(t, e.srv)
	m := &nats.Msg{Subject: spec.VaultGetSubject("n"), Reply: spec.ClientInbox("n.1") + ".x", Data: body}
	if err := asker.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	asker.Flush()
	time.Sleep(300 * time.Millisecond)
	if n := heard.Load(); n != 0 {
		t.Fatalf("node n's ask was answered on node n.1's inbox")
	}

	own := bustest.Connect(t, e.srv, nats.CustomInboxPrefix(spec.ClientInbox("n.1")))
	c := &vault.Client{NC: own, Node: "n.1", Keys: keys, Timeout: 2 * time.Second}
	if r := c.Ask(e.ctx, name, "app"); r.Outcome != vault.Sealed || string(r.Value) != "v" {
		t.Fatalf("asked on n.1's own inbox: %s", r)
	}
}

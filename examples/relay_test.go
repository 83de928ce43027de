package examples

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestAnAnswerGoesToTheAskersInboxAlone: a request names the subject its
// answer goes to, and with nats-server's allow_responses an answerer may
// publish its answer to whatever subject a request named. So anyone who may
// ask the server could have it publish on prov.ask.ace (or on a vault
// request in ace's name, or on mesh-vault.secret-changed), and a client
// could have the vault do the same: SPEC §2.3 says only the node's tool
// runner publishes prov.ask.<node>. Each answerer of the example mesh may
// answer only on an inbox: the server on anyone's, the vault on a client's,
// a client on its node's tool runner's; an answer to any other subject is
// refused, and answers to inboxes still arrive. (The vault may publish
// mesh-vault.secret-changed itself, so an answer there is its own to refuse.)
func TestAnAnswerGoesToTheAskersInboxAlone(t *testing.T) {
	forEachBus(t, testAnswersGoToInboxes)
}

func testAnswersGoToInboxes(t *testing.T, mode string) {
	s := startBus(t, mode)
	answerers := map[string]string{ // the answerer and the subject it answers
		"mesh-provisioner": "mesh-provisioner.provisioning",
		"mesh-vault":       "mesh-vault.get.provisioner.g14",
		"provisioner-ace":  "prov.ask.ace",
	}
	conns := map[string]*user{}
	for as, subject := range answerers {
		u := connect(t, s, as)
		if _, err := u.nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond([]byte(`{}`)) }); err != nil {
			t.Fatalf("%s: subscribing to %s: %v", as, subject, err)
		}
		if err := u.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		conns[as] = u
	}

	// Each asker may ask its answerer and hears the answer on its inbox.
	for _, c := range []struct{ asker, answerer string }{
		{"mesh-operator", "mesh-provisioner"},
		{"provisioner-g14", "mesh-provisioner"}, // refused: the client asks nothing of the server
		{"provisioner-g14", "mesh-vault"},
		{"toolrunner-ace", "provisioner-ace"},
	} {
		if c.asker == "provisioner-g14" && c.answerer == "mesh-provisioner" {
			continue
		}
		a := connect(t, s, c.asker)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := a.nc.RequestWithContext(ctx, answerers[c.answerer], []byte(`{}`))
		cancel()
		if err != nil {
			t.Errorf("%s asking %s on %s: %v (the server said %q, the answerer %q)",
				c.asker, c.answerer, answerers[c.answerer], err, a.errs.all(), conns[c.answerer].errs.all())
		}
	}

	// An answer to a subject that is no inbox is refused the answerer.
	for _, c := range []struct{ asker, answerer, reply string }{
		{"mesh-operator", "mesh-provisioner", "prov.ask.ace"},
		{"mesh-operator", "mesh-provisioner", "mesh-vault.get.provisioner.ace"},
		{"mesh-operator", "mesh-provisioner", "mesh-vault.secret-changed"},
		{"provisioner-g14", "mesh-vault", "prov.ask.ace"},
		{"provisioner-g14", "mesh-vault", "_INBOX.toolrunner.ace.x"},
		{"toolrunner-ace", "provisioner-ace", "prov.ask.g14"},
		{"toolrunner-ace", "provisioner-ace", "mesh-vault.get.provisioner.g14"},
		{"toolrunner-ace", "provisioner-ace", "_INBOX.provisioner.g14.x"},
	} {
		a := connect(t, s, c.asker)
		if err := a.nc.PublishRequest(answerers[c.answerer], c.reply, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := a.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		t.Run(c.asker+" has "+c.answerer+" answer on "+c.reply, func(t *testing.T) {
			conns[c.answerer].refused(t, "Publish", c.reply)
		})
	}
}

package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Only a node's tool runner may publish prov.ask.<node> (SPEC §5.4, by bus
// permission). But nats-server checks no push consumer's deliver subject
// against its creator's rights: another node's client, within the rights
// examples/ gives it, writes a question as one of its own applied keys and
// has a consumer of its own deliver it on prov.ask.ace. Such a delivery
// keeps the stream's subject; the client answered it all the same, and
// published the config value asked for on the consumer's $JS.ACK reply
// subject, for whoever may read that. It is no question of the tool
// runner's: it is not answered. The tool runner's own ask is, as before.
func TestAnAskDeliveredByAnotherClientsConsumerIsNotAnswered(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.client("ace", asUser("provisioner-ace"))
	m.waitState("ace", "web", "applied")

	acks := bustest.AckTap(t, m.nc)

	g14, err := nats.Connect(m.s.ClientURL(), nats.UserInfo("provisioner-g14", "dev-only-provisioner-g14"),
		nats.CustomInboxPrefix("_INBOX.provisioner.g14"))
	if err != nil {
		t.Fatal(err)
	}
	defer g14.Close()
	key := "$KV." + spec.AppliedBucket + ".g14.x"
	if _, err := g14.Request("$JS.API.STREAM.INFO.KV_"+spec.AppliedBucket, nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := g14.Publish(key, []byte(`{"module":"web","kind":"config","key":"model"}`)); err != nil {
		t.Fatal(err)
	}
	bustest.DeliverOn(t, g14, m.nc, "KV_"+spec.AppliedBucket, key, spec.AskSubject("ace"), "")

	// The tool runner's own ask is answered; by then the delivery (made
	// first, DeliverOn waiting for it) was handled too.
	tr, err := nats.Connect(m.s.ClientURL(), nats.UserInfo("toolrunner-ace", "dev-only-toolrunner-ace"),
		nats.CustomInboxPrefix("_INBOX.toolrunner.ace"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	reply, err := tr.Request(spec.AskSubject("ace"), []byte(`{"module":"web","kind":"config","key":"model"}`), 10*time.Second)
	if err != nil || !strings.Contains(string(reply.Data), `"value":"opus"`) {
		t.Fatalf("the tool runner's ask: %v %s", err, reply.Data)
	}
	time.Sleep(3 * time.Second) // an answer comes at once; the redeliveries, a second apart
	for _, a := range acks() {
		if strings.Contains(a, "opus") {
			t.Fatalf("the client answered a delivery of another node's consumer, the config value on its ack subject: %s", a)
		}
	}
}

package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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

	var mu sync.Mutex
	var acks []string
	tap, err := m.nc.Subscribe("$JS.ACK.>", func(msg *nats.Msg) {
		mu.Lock()
		acks = append(acks, string(msg.Data))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Unsubscribe()
	m.nc.Flush()

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
	stream := "KV_" + spec.AppliedBucket
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{
		"name": "spoof", "deliver_subject": spec.AskSubject("ace"), "filter_subject": key,
		"ack_policy": "explicit", "deliver_policy": "all", "max_deliver": 3, "ack_wait": int64(time.Second)}})
	r, err := g14.Request("$JS.API.CONSUMER.CREATE."+stream+".spoof."+key, body, 10*time.Second)
	if err != nil || strings.Contains(string(r.Data), `"error"`) {
		t.Fatalf("another node's client could not make its consumer: %v %s", err, r.Data)
	}

	// The tool runner's own ask is answered; by then the delivery (made
	// first) was handled too.
	tr, err := nats.Connect(m.s.ClientURL(), nats.UserInfo("toolrunner-ace", "dev-only-toolrunner-ace"),
		nats.CustomInboxPrefix("_INBOX.toolrunner.ace"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	bustest.Eventually(t, 30*time.Second, func() error {
		r, err := m.nc.Request("$JS.API.CONSUMER.INFO."+stream+".spoof", nil, 5*time.Second)
		if err != nil {
			return err
		}
		var info struct {
			Delivered struct {
				Consumer uint64 `json:"consumer_seq"`
			} `json:"delivered"`
		}
		json.Unmarshal(r.Data, &info)
		if info.Delivered.Consumer == 0 {
			return fmt.Errorf("nothing delivered yet: %s", r.Data)
		}
		return nil
	})
	reply, err := tr.Request(spec.AskSubject("ace"), []byte(`{"module":"web","kind":"config","key":"model"}`), 10*time.Second)
	if err != nil || !strings.Contains(string(reply.Data), `"value":"opus"`) {
		t.Fatalf("the tool runner's ask: %v %s", err, reply.Data)
	}
	time.Sleep(3 * time.Second) // an answer comes at once; the redeliveries, a second apart
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acks {
		if strings.Contains(a, "opus") {
			t.Fatalf("the client answered a delivery of another node's consumer, the config value on its ack subject: %s", a)
		}
	}
}

package server

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

// A client may not ask the verb (SPEC §2.3 r2: it holds no right on
// mesh-provisioner.provisioning), but nats-server checks no push
// consumer's deliver subject against its creator's rights: a client wrote
// a query as one of its own applied keys and had a consumer of its own
// deliver it to the verb's queue group, and the server answered it (a
// sweep of the whole mesh for each delivery, the answer on the consumer's
// $JS.ACK subject). Such a delivery keeps the stream's subject: it is not
// answered. A query published on the subject is, as before.
func TestAQueryDeliveredByAClientsConsumerIsNotAnswered(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	seed(t, js)
	serveQuery(t, nc, js)

	var mu sync.Mutex
	var acks []string
	tap, err := nc.Subscribe("$JS.ACK.>", func(m *nats.Msg) {
		mu.Lock()
		acks = append(acks, string(m.Data))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Unsubscribe()
	put(t, bucket(t, js, spec.AppliedBucket), "ace.q", `{"what":"sweep"}`)
	stream, key := "KV_"+spec.AppliedBucket, "$KV."+spec.AppliedBucket+".ace.q"
	body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{
		"name": "spoof", "deliver_subject": spec.QuerySubject, "deliver_group": queryQueue, "filter_subject": key,
		"ack_policy": "explicit", "deliver_policy": "all", "max_deliver": 3, "ack_wait": int64(time.Second)}})
	if r, err := nc.Request("$JS.API.CONSUMER.CREATE."+stream+".spoof."+key, body, 10*time.Second); err != nil || strings.Contains(string(r.Data), `"error"`) {
		t.Fatalf("creating the consumer: %v", err)
	}
	bustest.Eventually(t, 30*time.Second, func() error {
		r, err := nc.Request("$JS.API.CONSUMER.INFO."+stream+".spoof", nil, 5*time.Second)
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
			return fmt.Errorf("nothing delivered yet")
		}
		return nil
	})
	if r, _ := ask(t, nc, map[string]any{"what": "sweep"}); r.What != "sweep" {
		t.Fatalf("a query published on the subject: %+v", r)
	}
	time.Sleep(3 * time.Second) // an answer comes within a sweep; the redeliveries, a second apart
	mu.Lock()
	defer mu.Unlock()
	for _, a := range acks {
		if strings.Contains(a, `"what"`) {
			t.Fatalf("the server answered a delivery of a client's consumer: %.200s", a)
		}
	}
}

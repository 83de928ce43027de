package server

import (
	"strings"
	"testing"
	"time"

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

	acks := bustest.AckTap(t, nc)
	put(t, bucket(t, js, spec.AppliedBucket), "ace.q", `{"what":"sweep"}`)
	bustest.DeliverOn(t, nc, nc, "KV_"+spec.AppliedBucket, "$KV."+spec.AppliedBucket+".ace.q", spec.QuerySubject, queryQueue)
	if r, _ := ask(t, nc, map[string]any{"what": "sweep"}); r.What != "sweep" {
		t.Fatalf("a query published on the subject: %+v", r)
	}
	time.Sleep(3 * time.Second) // an answer comes within a sweep; the redeliveries, a second apart
	for _, a := range acks() {
		if strings.Contains(a, `"what"`) {
			t.Fatalf("the server answered a delivery of a client's consumer: %.200s", a)
		}
	}
}

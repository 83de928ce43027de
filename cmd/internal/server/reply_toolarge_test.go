package server

import (
	"strings"
	"testing"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A reply the bus would not carry (one key longer than a page: a bus
// whose max_control_line is over its max_payload takes such a key) is
// answered with a small {"error"} saying so, not left unsent: the
// requester timed out, and only the server's log said why. The sweep,
// which cuts what it quotes of a key, still answers.
func TestAReplyTooLargeForTheBusIsAnsweredWithAnError(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload, o.MaxControlLine = 4096, 16*1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	put(t, bucket(t, js, spec.AppliedBucket), "ace."+strings.Repeat("x", 6000), `{"state":"applied"}`)
	serveQuery(t, nc, js)
	r, raw := askRaw(t, nc, []byte(`{"what":"applied"}`))
	if !strings.Contains(r.Error, "exceeds the bus's max payload of 4096 bytes") {
		t.Errorf("a reply too large for the bus: answered %.300s, want an error saying so", raw)
	}
	if _, err := AskSweep(testCtx(t), nc, "", "", ""); err != nil {
		t.Errorf("the sweep: %v", err)
	}
}

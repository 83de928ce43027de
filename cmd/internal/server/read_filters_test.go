package server

import (
	"encoding/json"
	"strings"
	"testing"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A bucket that cannot be watched under a request's narrowing (on a bus
// whose max payload is smaller than the watch's consumer request) is
// answered with an error quoting the watch's filters cut: built from the
// request's names, quoted whole (twice: alone and followed by .>) they
// made the refusal as long as the request.
func TestAWatchRefusedQuotesItsFiltersCut(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 1024 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	serveQuery(t, nc, js)
	node, module := strings.Repeat("n", 255), strings.Repeat("m", 255)
	body, _ := json.Marshal(map[string]string{"what": "needs", "node": node, "module": module})
	r, raw := askRaw(t, nc, body)
	if !strings.Contains(r.Error, "watching bucket mesh-provisioner_needs") {
		t.Fatalf("a watch the bus refuses: answered %.300s, want the watch's error", raw)
	}
	if strings.Contains(r.Error, module) || !strings.Contains(r.Error, "(cut: ") {
		t.Errorf("the error quotes the filters whole: %s", r.Error)
	}
}

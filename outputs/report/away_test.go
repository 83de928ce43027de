package report

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// While the bus is away, a bucket not yet opened is not looked up: the
// look-up, a request, would hold its caller (the daemon's loop, and with
// it the control socket's status and explain) for its whole timeout, once
// per bucket at every retry. It fails at once, saying why.
func TestABucketIsNotLookedUpWhileTheBusIsAway(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	p := &Publisher{NC: nc, JS: js, Node: "n1"}
	ctx := context.Background()
	s.Shutdown()
	bustest.Eventually(t, 5*time.Second, func() error {
		if nc.IsConnected() {
			return errors.New("still connected")
		}
		return nil
	})
	start := time.Now()
	err := p.Needs(ctx, "web", []Need{{Node: "n1", Module: "web", Kind: "db", Name: "main", State: "met"}})
	took := time.Since(start)
	if !errors.Is(err, errNotConnected) {
		t.Fatalf("needs with the bus away: %v, want %v", err, errNotConnected)
	}
	if took > 2*time.Second { // a look-up waits out 5 s
		t.Errorf("needs with the bus away held its caller %s", took)
	}
}

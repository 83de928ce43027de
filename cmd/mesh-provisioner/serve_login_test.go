package main

import (
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// serve with no login on a bus that wants one (every real fleet's, the
// lab's): the bus says only "Authorization Violation"; the log says what
// to give too, as the sweep's error does.
func TestServeWithNoLoginSaysToGiveItsCreds(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
	code, _, errs := runFor(t, 10*time.Second, "serve", "--nats", s.ClientURL())
	t.Logf("serve logged:\n%s", errs)
	if code != 1 || !strings.Contains(errs, "Authorization Violation") {
		t.Fatalf("exit %d; want 1 and the bus's reason", code)
	}
	if !strings.Contains(errs, "no --creds given") || !strings.Contains(errs, "rights --role server --format nsc") {
		t.Errorf("the log does not say to give the server's creds")
	}
}

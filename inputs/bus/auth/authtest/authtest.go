// Package authtest runs, for tests, an embedded nats-server in operator
// mode whose users are JWTs with exactly the rights nodes/spec gives them:
// the bus a real fleet runs, as the examples and the sweep's tests need it.
package authtest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Bus runs a bus in operator mode (an operator named "example") with a
// user for each of fleet, and says where each user's .creds file is (by
// user name); it stops when the test ends.
func Bus(t testing.TB, fleet []spec.Rights) (*server.Server, map[string]string) {
	t.Helper()
	op, err := auth.NewOperator("example")
	if err != nil {
		t.Fatal(err)
	}
	o := bustest.Options(t)
	o.Host = "127.0.0.1"
	if err := op.Configure(&o); err != nil {
		t.Fatal(err)
	}
	s := bustest.Run(t, &o)
	creds, err := op.WriteCreds(t.TempDir(), fleet)
	if err != nil {
		t.Fatal(err)
	}
	return s, creds
}

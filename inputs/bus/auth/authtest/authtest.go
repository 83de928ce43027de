// Package authtest runs, for tests, an embedded nats-server whose users
// have exactly the rights nodes/spec gives them: in operator mode with a
// JWT user each (Bus), or with the password users of a generated
// configuration such as examples/nats/server.conf (ConfigOptions).
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

// ConfigOptions is the nats-server configuration file at path, to run on
// a free port of 127.0.0.1 with no monitoring port and a store of the
// test's own.
func ConfigOptions(t testing.TB, path string) *server.Options {
	t.Helper()
	o, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	o.Host, o.Port = "127.0.0.1", -1
	o.HTTPHost, o.HTTPPort = "", 0
	o.StoreDir = t.TempDir()
	return o
}

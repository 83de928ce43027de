package auth

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestLoadOperatorKeepsItsKeys: a bus restarted with the operator loaded
// from the same directory is the same account (its streams are found
// again), so a creds file made before the restart still logs in; one of
// another operator does not.
func TestLoadOperatorKeepsItsKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "operator")
	first, err := LoadOperator("lab", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range keyFiles {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v; want a 0600 file", f, err, fi)
		}
	}
	again, err := LoadOperator("lab", dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewOperator("other")
	if err != nil {
		t.Fatal(err)
	}
	s := bustest.Start(t, func(o *server.Options) {
		if err := again.Configure(o); err != nil {
			t.Fatal(err)
		}
	})
	r, _ := spec.RightsOf(spec.RoleLab, "", nil)
	for _, c := range []struct {
		op   *Operator
		want bool
	}{{first, true}, {other, false}} {
		creds, err := c.op.Creds(r, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "lab.creds")
		if err := os.WriteFile(path, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(s.ClientURL(), nats.UserCredentials(path), nats.NoReconnect())
		if (err == nil) != c.want {
			t.Errorf("creds of operator %s: connect error %v, want success %v", c.op.claims.Name, err, c.want)
		}
		if err == nil {
			nc.Close()
		}
	}
}

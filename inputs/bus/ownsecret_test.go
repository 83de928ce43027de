package bus

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// OwnSecret is the nkey seed of a .creds file or of a seed file; nothing
// for a password or a token (people choose them: a report would be an
// oracle for them), nor on a bus with no auth.
func TestOwnSecretIsTheNkeySeedTheClientConnectsWith(t *testing.T) {
	dir := t.TempDir()
	op, err := auth.NewOperator("example")
	if err != nil {
		t.Fatal(err)
	}
	rights, err := spec.RightsOf("client", "ace", nil)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := op.Creds(rights, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.ParseDecoratedNKey(creds)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	renewed, err := op.Creds(rights, time.Now().Add(time.Hour)) // another JWT, and another seed: a new user
	if err != nil {
		t.Fatal(err)
	}
	credsFile, renewedFile, seedFile := filepath.Join(dir, "ace.creds"), filepath.Join(dir, "renewed.creds"), filepath.Join(dir, "ace.nk")
	for f, b := range map[string][]byte{credsFile: creds, renewedFile: renewed, seedFile: append(append([]byte{}, seed...), '\n')} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		o    Options
		want []byte
	}{
		{"creds", Options{Creds: credsFile}, seed},
		{"seed file", Options{NKeySeedFile: seedFile}, seed},
		{"password", Options{URL: "nats://127.0.0.1:4222", User: "provisioner-ace", Password: "pw"}, nil},
		{"password in the URL", Options{URL: "nats://provisioner-ace:in-url@h1:4222,nats://h2:4222"}, nil},
		{"no auth", Options{URL: "nats://127.0.0.1:4222"}, nil},
		{"a user with no password", Options{URL: "nats://tok@127.0.0.1:4222"}, nil},
	} {
		got, err := c.o.OwnSecret()
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: OwnSecret() = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if other, _ := (Options{Creds: renewedFile}).OwnSecret(); bytes.Equal(other, seed) {
		t.Error("two users' creds gave one secret")
	}
	if _, err := (Options{Creds: filepath.Join(dir, "missing.creds")}).OwnSecret(); err == nil {
		t.Error("a creds file that is not there gave no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.creds"), []byte("no seed here"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := (Options{Creds: filepath.Join(dir, "bad.creds")}).OwnSecret(); err == nil || s != nil {
		t.Errorf("a creds file with no seed gave %q, %v", s, err)
	}
}

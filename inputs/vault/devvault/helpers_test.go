package devvault_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

type env struct {
	srv    *server.Server
	nc     *nats.Conn // the vault's connection
	js     jetstream.JetStream
	vault  *devvault.Vault
	vlog   *bustest.Buffer
	ctx    context.Context
	bucket jetstream.KeyValue // nil when made without the bucket
}

// newEnv runs a server, optionally makes the assignments bucket holding
// the given <node>.<module> assignments, and starts a dev vault.
func newEnv(t *testing.T, withBucket bool, assignments ...[2]string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e := &env{srv: bustest.Start(t), vlog: &bustest.Buffer{}, ctx: ctx}
	e.nc = bustest.Connect(t, e.srv)
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	e.js = js
	if withBucket {
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket})
		if err != nil {
			t.Fatalf("creating %s: %v", spec.AssignmentsBucket, err)
		}
		e.bucket = kv
		for _, a := range assignments {
			e.assign(t, a[0], a[1])
		}
	}
	e.vault = devvault.New(zerolog.New(e.vlog))
	if err := e.vault.Start(e.nc, js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.vault.Stop)
	return e
}

func (e *env) assign(t *testing.T, node, module string) {
	t.Helper()
	if _, err := e.bucket.Put(e.ctx, spec.EncodeKey(node, module),
		[]byte(`{"node":"`+node+`","module":"`+module+`","provisioning":{}}`)); err != nil {
		t.Fatalf("assigning %s to %s: %v", module, node, err)
	}
}

// client is a vault client for node on its own connection.
func (e *env) client(t *testing.T, node string, log zerolog.Logger) *vault.Client {
	t.Helper()
	keys, err := vault.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	return &vault.Client{NC: bustest.Connect(t, e.srv), Node: node, Keys: keys, Timeout: 2 * time.Second, Log: log}
}

func hexOf(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

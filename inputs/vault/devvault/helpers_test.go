package devvault_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsserver "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// logBuffer is a bytes.Buffer safe for the subscription goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type env struct {
	srv    *server.Server
	nc     *nats.Conn // the vault's connection
	js     jetstream.JetStream
	vault  *devvault.Vault
	vlog   *logBuffer
	ctx    context.Context
	bucket jetstream.KeyValue // nil when made without the bucket
}

func runServer(t *testing.T) *server.Server {
	t.Helper()
	o := natsserver.DefaultTestOptions
	o.Port = -1
	o.JetStream = true
	o.StoreDir = t.TempDir()
	s := natsserver.RunServer(&o)
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, s *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// newEnv runs a server, optionally makes the assignments bucket holding
// the given <node>.<module> assignments, and starts a dev vault.
func newEnv(t *testing.T, withBucket bool, assignments ...[2]string) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e := &env{srv: runServer(t), vlog: &logBuffer{}, ctx: ctx}
	e.nc = connect(t, e.srv)
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
	return &vault.Client{NC: connect(t, e.srv), Node: node, Keys: keys, Timeout: 2 * time.Second, Log: log}
}

func checkFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hexOf(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

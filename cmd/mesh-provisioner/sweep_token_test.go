package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A bus authorised by token takes it in the URL as its user
// (nats://TOKEN@host, as nats.go reads a user with no password). The sweep
// took that "user" for a name to hear replies under: every request went
// out with the reply subject _INBOX.<TOKEN>.…, on the bus for anyone who
// listens (and in the server's and a permission violation's text).
func TestASweepByTokenPutsNoTokenOnTheBus(t *testing.T) {
	const token = "S3CRETtokenForTheSweep"
	s := bustest.Start(t, func(o *server.Options) { o.Authorization = token })
	nc, js := bustest.JetStream(t, s, nats.Token(token))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	reg, _ := js.KeyValue(ctx, spec.RegistryBucket)
	if _, _, err := srv.PublishRegistry(ctx, reg, srv.Registry()); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket}); err != nil {
		t.Fatal(err)
	}
	stop, err := srv.ServeQuery(context.Background(), nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var mu sync.Mutex
	var seen strings.Builder
	sub, err := nc.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&seen, "%s %s %s\n", m.Subject, m.Reply, m.Data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	url := "nats://" + token + "@" + strings.TrimPrefix(s.ClientURL(), "nats://")
	code, out, errs := runSweep("--nats", url)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (an empty mesh); stdout %q stderr %q", code, out, errs)
	}
	nc.Flush()
	sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(seen.String(), spec.QuerySubject) {
		t.Fatalf("the sweep's request was not seen on the bus:\n%s", seen.String())
	}
	if strings.Contains(seen.String(), token) || strings.Contains(out+errs, token) {
		t.Errorf("the token is on the bus or in the output:\n%s\n%s%s", seen.String(), out, errs)
	}
}

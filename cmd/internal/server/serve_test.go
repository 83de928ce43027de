package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The server started before the bus waits for it, then creates the
// buckets, publishes the registry, answers the verb, and stops cleanly.
func TestRunWaitsForTheBusServesAndStops(t *testing.T) {
	port := bustest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: fmt.Sprintf("nats://127.0.0.1:%d", port), RegistryEvery: time.Hour, Log: quietLog()})
	}()
	time.Sleep(300 * time.Millisecond) // Run is retrying against nothing

	s := bustest.Start(t, func(o *natsd.Options) { o.Port = port })
	nc, js := bustest.JetStream(t, s)
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, b := range Buckets {
			if _, err := js.KeyValue(context.Background(), b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		got, err := bucket(t, js, spec.RegistryBucket).Get(context.Background(), "dir")
		if err != nil {
			return fmt.Errorf("registry kind dir: %w", err)
		}
		if want := specJSON(t, "dir"); !bytes.Equal(got.Value(), want) {
			return fmt.Errorf("registry kind dir holds %s", got.Value())
		}
		return nil
	})
	bustest.Eventually(t, 5*time.Second, func() error {
		m, err := nc.Request(spec.QuerySubject, []byte(`{"what":"registry"}`), time.Second)
		if err != nil {
			return err
		}
		if !bytes.Contains(m.Data, []byte(`"kind":"secret"`)) {
			return fmt.Errorf("registry answer: %.200s", m.Data)
		}
		return nil
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after its context ended: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not stop")
	}
	if _, err := nc.Request(spec.QuerySubject, nil, 300*time.Millisecond); err == nil {
		t.Errorf("the verb is still answered after Run stopped")
	}
}

package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The server started before the bus waits for it, saying so with the
// bus's URL, and its /metrics answers 503 saying why rather than leave a
// scrape hanging; then it creates the buckets, publishes the registry,
// answers the verb and /metrics, and stops cleanly.
func TestRunWaitsForTheBusServesAndStops(t *testing.T) {
	port := bustest.FreePort(t)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	addr := fmt.Sprintf("127.0.0.1:%d", bustest.FreePort(t))
	metrics := "http://" + addr + "/metrics"
	var logs bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{NATSURL: natsURL, RegistryEvery: time.Hour, Metrics: addr, Log: zerolog.New(&logs)})
	}()
	scrape := func() (int, string, error) {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(metrics)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	bustest.Eventually(t, 5*time.Second, func() error {
		if !strings.Contains(logs.String(), "bus not reachable yet") || !strings.Contains(logs.String(), natsURL) {
			return fmt.Errorf("the server does not say the bus is not reachable yet at %s:\n%s", natsURL, logs.String())
		}
		return nil
	})
	if code, body, err := scrape(); err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "the bus is not reachable yet") {
		t.Errorf("/metrics with no bus: %d %q %v; want 503 saying the bus is not reachable yet", code, body, err)
	}

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

	bustest.Eventually(t, 5*time.Second, func() error {
		if code, body, err := scrape(); err != nil || code != http.StatusOK || !strings.Contains(body, "mesh_provisioner_modules") {
			return fmt.Errorf("/metrics with the bus: %d %.200q %v", code, body, err)
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

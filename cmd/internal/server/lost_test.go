package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// runServer runs Run on url until the test ends.
func runServer(t *testing.T, url string, every time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var logs bustest.Buffer
	log := zerolog.New(&logs).With().Timestamp().Logger()
	go func() { done <- Run(ctx, Config{NATSURL: url, RegistryEvery: every, Log: log}) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server logged:\n%s", logs.String())
		}
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("Run did not stop")
		}
	})
}

// provisionerBucketsThere fails until every one of the four buckets is
// there and the registry holds kind dir as the table says.
func provisionerBucketsThere(t *testing.T, js jetstream.JetStream) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, b := range Buckets {
			if _, err := js.KeyValue(ctx, b); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		kv, _ := js.KeyValue(ctx, spec.RegistryBucket)
		got, err := kv.Get(ctx, "dir")
		if err != nil {
			return fmt.Errorf("registry kind dir: %w", err)
		}
		if want := specJSON(t, "dir"); !bytes.Equal(got.Value(), want) {
			return fmt.Errorf("registry kind dir holds %s", got.Value())
		}
		return nil
	}
}

// A bucket deleted while the server runs is made again at once (JetStream
// announces the deletion), not at the next registry interval (an hour
// here), and the registry is written into it again.
func TestRunMakesADeletedBucketAgain(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	there := provisionerBucketsThere(t, js)
	bustest.Eventually(t, 10*time.Second, there)

	for _, b := range []string{spec.RegistryBucket, spec.NeedsBucket} {
		if err := js.DeleteKeyValue(testCtx(t), b); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventually(t, 10*time.Second, there)

	// Again, the clients' bucket alone (the registry's writes still work).
	if err := js.DeleteKeyValue(testCtx(t), spec.CollectBucket); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 10*time.Second, there)
}

// A bus that comes back with its JetStream store wiped (no deletion is
// announced) gets the buckets and the registry again once the server has
// reconnected.
func TestRunMakesTheBucketsAgainAfterTheStoreIsWiped(t *testing.T) {
	port := bustest.FreePort(t)
	onPort := func(o *natsd.Options) { o.Port = port }
	s := bustest.Start(t, onPort)
	runServer(t, s.ClientURL(), time.Hour)
	_, js := bustest.JetStream(t, s)
	bustest.Eventually(t, 10*time.Second, provisionerBucketsThere(t, js))

	bustest.Stop(s)
	s = bustest.Start(t, onPort) // the same port, a new empty store
	_, js = bustest.JetStream(t, s)
	// The server reconnects with its backoff (250 ms doubling): on a
	// loaded machine its next try may be seconds away.
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js))
}

// Without any announcement the registry's pass makes a missing bucket
// again: at each interval at the latest.
func TestRegistryPassMakesMissingBucketsAgain(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	kv := bucket(t, js, spec.RegistryBucket)
	// A bucket deleted while a pass reads it stalls the read (nats.go's
	// watcher waits for the stream to come back) until readTimeout; without
	// a kick the next pass follows. Shorten that wait for this test.
	// A pass that failed (a JetStream call timed out on a loaded machine)
	// waits retryAfterFailure before the next: shorten that too, so what
	// is waited for below is passes, not the waits between them.
	// A put whose ack was lost to the delete (the stream took it and was
	// gone) waits opTimeout: shortened as well.
	was, wasRetry, wasOp := readTimeout, retryAfterFailure, opTimeout
	readTimeout, retryAfterFailure, opTimeout = 2*time.Second, 300*time.Millisecond, 2*time.Second
	t.Cleanup(func() { readTimeout, retryAfterFailure, opTimeout = was, wasRetry, wasOp })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loop := registryLoop{kv: kv, every: 300 * time.Millisecond, log: quietLog(),
		ensure: func(ctx context.Context) error { return EnsureBuckets(ctx, js, 1) }}
	go func() { loop.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	there := provisionerBucketsThere(t, js)
	bustest.Eventually(t, 10*time.Second, there)
	for _, b := range []string{spec.RegistryBucket, spec.AppliedBucket} {
		if err := js.DeleteKeyValue(testCtx(t), b); err != nil {
			t.Fatal(err)
		}
	}
	// A pass reading a bucket deleted under it waits readTimeout, and the
	// next ensures again; on a loaded machine (CI's race run) JetStream's
	// creates take seconds more (a clean-clone CI run once waited past
	// 30 s): what is asserted is that they come back.
	bustest.Eventually(t, 60*time.Second, there)
}

package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An operator (or a script) who changes the registry by hand changes it
// for every client of the mesh: a kind whose entry names another bucket,
// or is gone, makes every need of that kind wait. The registry is the
// server's, compiled in: a key changed, deleted or added by hand is put
// back within seconds, not at the next hourly pass; the server's own
// writes, and an unchanged registry, cost nothing more.
func TestRegistryChangedByHandIsPutBackWithinSeconds(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js)) // past one lookup timed out (10 s) and its retry
	kv := bucket(t, js, spec.RegistryBucket)
	ctx := testCtx(t)
	var secret jetstream.KeyValueEntry
	bustest.Eventually(t, 30*time.Second, func() (err error) { // the buckets are made before the registry is put
		secret, err = kv.Get(ctx, "secret")
		return err
	})

	put(t, kv, "config", `{"kind":"config","owner":"mesh-config","bucket":"elsewhere"}`)
	if err := kv.Delete(ctx, "dir"); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "weird", `{"kind":"weird","owner":"nobody"}`)
	bustest.Eventually(t, 8*time.Second, func() error {
		for _, k := range []string{"config", "dir"} {
			got, err := kv.Get(ctx, k)
			if err != nil {
				return fmt.Errorf("kind %s: %w", k, err)
			}
			if want := specJSON(t, k); !bytes.Equal(got.Value(), want) {
				return fmt.Errorf("kind %s holds %s", k, got.Value())
			}
		}
		if _, err := kv.Get(ctx, "weird"); err == nil {
			return fmt.Errorf("kind weird, which no domain answers, is still there")
		}
		return nil
	})
	if again, _ := kv.Get(ctx, "secret"); again == nil || again.Revision() != secret.Revision() {
		t.Errorf("kind secret, never changed, was written again")
	}

	// Put back, the registry stays as it is: nothing more is written.
	st, err := js.Stream(ctx, "KV_"+spec.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	last := st.CachedInfo().State.LastSeq
	time.Sleep(3 * time.Second)
	if info, err := st.Info(ctx); err != nil || info.State.LastSeq != last {
		t.Errorf("the registry was written again after it was put back: last sequence %d, was %d (%v)", info.State.LastSeq, last, err)
	}
}

// Two servers of different versions on one bus (a rolling upgrade) each
// put back what the other wrote: the repairs of a registry that keeps
// being changed come ever later (doubling up to the registry's interval),
// so the two cannot flap the mesh's registry every second.
func TestRegistryRepairsBackOffWhenItKeepsBeingChanged(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js)) // past one lookup timed out (10 s) and its retry
	kv := bucket(t, js, spec.RegistryBucket)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The "other server" puts its own config back as soon as it is changed.
	w, err := kv.Watch(ctx, "config", jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	other := []byte(`{"kind":"config","owner":"mesh-config-v2"}`)
	put(t, kv, "config", string(other))
	repairs := 0
	deadline := time.After(12 * time.Second)
	for done := false; !done; {
		select {
		case e := <-w.Updates():
			if e != nil && !bytes.Equal(e.Value(), other) {
				repairs++
				put(t, kv, "config", string(other))
			}
		case <-deadline:
			done = true
		}
	}
	// Delays 1 s, 2 s, 4 s (…): 3 or 4 repairs in 12 s, not 12.
	if repairs == 0 || repairs > 5 {
		t.Errorf("the server put kind config back %d times in 12 s against another writer; want 1 to 5", repairs)
	}
}

// The registry bucket deleted and made again by the server is watched
// again: a change by hand after that is put back within seconds too.
func TestRegistryMadeAgainIsStillWatchedForChangesByHand(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js)) // past one lookup timed out (10 s) and its retry
	ctx := testCtx(t)
	if err := js.DeleteKeyValue(ctx, spec.RegistryBucket); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 15*time.Second, func() error {
		kv, err := js.KeyValue(ctx, spec.RegistryBucket)
		if err != nil {
			return err
		}
		keys, err := kv.Keys(ctx)
		if err != nil || len(keys) != len(Registry()) {
			return fmt.Errorf("registry made again holds %d keys (%v)", len(keys), err)
		}
		return nil
	})
	kv := bucket(t, js, spec.RegistryBucket)
	put(t, kv, "config", `{"kind":"config","owner":"by-hand"}`)
	bustest.Eventually(t, 8*time.Second, func() error {
		got, err := kv.Get(ctx, "config")
		if err != nil {
			return err
		}
		if want := specJSON(t, "config"); !bytes.Equal(got.Value(), want) {
			return fmt.Errorf("kind config holds %s", got.Value())
		}
		return nil
	})
}

package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The registry's stream purged (`nats stream purge
// KV_mesh-provisioner_registry`, whole or one kind's subject) takes its
// entries away without a delete marker, which the server's watch for
// changes by hand does not hear: every client of the mesh waits on every
// kind until the next hourly pass. The running server puts the registry
// back within seconds, as for an entry deleted.
func TestARegistryStreamPurgedIsPutBackWithinSeconds(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	runServer(t, s.ClientURL(), time.Hour)
	bustest.Eventually(t, 30*time.Second, provisionerBucketsThere(t, js))
	kv := bucket(t, js, spec.RegistryBucket)
	ctx := testCtx(t)
	all := func() error {
		for _, e := range Registry() {
			if _, err := kv.Get(ctx, e.Kind); err != nil {
				return fmt.Errorf("kind %s: %w", e.Kind, err)
			}
		}
		return nil
	}
	bustest.Eventually(t, 10*time.Second, all)
	st, err := js.Stream(ctx, "KV_"+spec.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 15*time.Second, all)

	// A key of no kind deleted leaves its marker, a message: the count
	// stays at the table's once one kind's subject is purged.
	put(t, kv, "weird", `{}`)
	bustest.Eventually(t, 15*time.Second, func() error {
		if e, err := kv.Get(ctx, "weird"); err == nil {
			return fmt.Errorf("weird still there (revision %d)", e.Revision())
		}
		return nil
	})
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+spec.RegistryBucket+".dir")); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, 15*time.Second, all)
}

package server

import (
	"fmt"
	"maps"
	"slices"
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

// A kind's subject purged right after a pass that deleted a key of no
// kind (its delete marker counts as a value): the count of values is the
// table's again, and a look that starts then saw no purge. A look by
// subject does.
func TestAPurgeLookFindsAKindGoneWhoseCountAMarkerMakesUp(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ctx := testCtx(t)
	if err := EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	kv := bucket(t, js, spec.RegistryBucket)
	want := registryBytes(Registry())
	if _, _, err := PublishRegistry(ctx, kv, Registry()); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "weird", `{}`)
	if err := kv.Delete(ctx, "weird"); err != nil { // its marker stays
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_"+spec.RegistryBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+spec.RegistryBucket+".dir")); err != nil {
		t.Fatal(err)
	}
	byCount := &purgeWatch{kv: kv, kinds: len(want)}
	if byCount.purged(ctx) {
		t.Fatal("the count alone found the purge: this is not the case it misses")
	}
	bySubject := &purgeWatch{kv: kv, js: js, keys: slices.Sorted(maps.Keys(want)), kinds: len(want)}
	if !bySubject.purged(ctx) {
		t.Fatal("a look by subject did not find kind dir gone")
	}
	if err := func() error { _, _, err := PublishRegistry(ctx, kv, Registry()); return err }(); err != nil {
		t.Fatal(err)
	}
	if bySubject.purged(ctx) {
		t.Fatal("a look by subject finds a kind gone once the pass put it back")
	}
}

package server

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func TestEnsureBucketsCreatesAbsentAndLeavesExisting(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ctx := testCtx(t)

	// An operator made the needs bucket already, their own way.
	mine, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: spec.NeedsBucket, History: 5, Description: "made by hand", MaxValueSize: 4096,
	})
	if err != nil {
		t.Fatal(err)
	}
	put(t, mine, "ace.m.config.k", `{"state":"met"}`)

	for range 2 { // a second run finds everything there
		if err := EnsureBuckets(ctx, js, 1); err != nil {
			t.Fatalf("EnsureBuckets: %v", err)
		}
	}
	for _, name := range []string{spec.RegistryBucket, spec.AppliedBucket, spec.CollectBucket} {
		st, err := bucket(t, js, name).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.History() != 1 {
			t.Errorf("%s: history %d, want 1", name, st.History())
		}
	}
	kv := bucket(t, js, spec.NeedsBucket)
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config
	if st.History() != 5 || cfg.Description != "made by hand" || cfg.MaxMsgSize != 4096 {
		t.Errorf("existing bucket changed: history %d, description %q, max value %d", st.History(), cfg.Description, cfg.MaxMsgSize)
	}
	if _, err := kv.Get(ctx, "ace.m.config.k"); err != nil {
		t.Errorf("existing key lost: %v", err)
	}
}

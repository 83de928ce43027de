package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A member of an R3 cluster started again serves, while it catches up,
// the bucket as it was. The server's reads (its sweep, the verb's
// answers, the registry's pass) wait for it before they read: a sweep
// run then reported each module's older report.
func TestAReadAfterAMemberRestartSaysWhatTheBucketHolds(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	_, js := c.Connect(t)
	ctx := context.Background()
	var kv jetstream.KeyValue
	bustest.Eventually(t, 30*time.Second, func() (err error) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mesh-provisioner_applied", Replicas: 3})
		return err
	})
	const modules = 20
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("applied"))
	}
	lag := c.Follower(t, js, "KV_mesh-provisioner_applied") // the member that will lag
	startAgain := c.Stop(t, lag)
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("failed"))
	}
	bustest.PutOthers(t, js, "mesh-provisioner_applied", 20000)
	startAgain()
	// Reads one after another while it catches up: each goes through a
	// consumer placed on any member.
	for try := range 30 {
		entries, err := readAll(ctx, kv, []string{"ace.>"}, false)
		if err != nil {
			t.Fatalf("try %d: %v", try, err)
		}
		if len(entries) != modules {
			t.Fatalf("try %d: %d reports read, want %d", try, len(entries), modules)
		}
		for _, e := range entries {
			if string(e.Value()) != "failed" {
				t.Fatalf("try %d: %s read as %q, not the last one written (failed)", try, e.Key(), e.Value())
			}
		}
	}
}

package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A member of an R3 cluster started again serves, while it catches up,
// the bucket as it was. The server's reads (its sweep, the verb's
// answers, the registry's pass) wait for it before they read: a sweep
// run then reported each module's older report.
func TestAReadAfterAMemberRestartSaysWhatTheBucketHolds(t *testing.T) {
	// What is shown is that a read waits for the member; how long it
	// waits before it reads all the same is the server's choice, a
	// second, which a member catching up on a loaded machine outlasts.
	was := replicaWait
	replicaWait = time.Minute
	t.Cleanup(func() { replicaWait = was })
	c := bustest.StartCluster(t, 3)
	_, js := c.Connect(t)
	ctx := context.Background()
	kv := c.KV(t, js, "mesh-provisioner_applied")
	const modules = 20
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("applied"))
	}
	c.MissedByAMember(t, js, "mesh-provisioner_applied", func() {
		for m := range modules {
			bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), []byte("failed"))
		}
	})
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

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The registry bucket deleted while the client runs says what it says at
// a start without it: every kind waits because the bucket does not exist
// (not because the registry does not name it), and made again empty, the
// kinds wait on the registry naming them, no entry of the old bucket kept.
func TestARegistryBucketDeletedWhileRunningSaysItIsGoneThenEmpty(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	if err := m.js.DeleteKeyValue(t.Context(), spec.RegistryBucket); err != nil {
		t.Fatal(err)
	}
	m.waitWaiting("ace", "web", `"kind":"config"`, `"kind":"port"`, `"kind":"dir"`, "bucket "+spec.RegistryBucket+" does not exist yet")
	if _, err := m.js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: spec.RegistryBucket}); err != nil {
		t.Fatal(err)
	}
	m.waitWaiting("ace", "web", "the registry ("+spec.RegistryBucket+") does not name kind config",
		"the registry ("+spec.RegistryBucket+") does not name kind port", "the registry ("+spec.RegistryBucket+") does not name kind dir")
	m.put(spec.RegistryBucket, "config", `{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`)
	// Its report said port waits before the entry went in too: what is
	// waited for is that config no longer waits, and port still does.
	bustest.Eventually(t, 10*time.Second, func() error {
		r, _ := m.report("ace", "web")
		if w := fmt.Sprint(r["waiting"]); contains(w, `kind:config`) || !contains(w, "does not name kind port") {
			return fmt.Errorf("config still waits once named, or port no longer: %v", r["waiting"])
		}
		return nil
	})
}

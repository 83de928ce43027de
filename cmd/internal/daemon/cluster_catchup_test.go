package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client started again while a member of its R3 cluster catches up
// (chaos seed 665175): the member missed the module's "failed" report (its
// fill socket was away), and still serves the "applied" one before it.
// The new client fills the file unchanged, and its report, equal to that
// older one, must still be put: the bucket says "applied" again, not the
// "failed" it holds for good when the start's sweep read through the
// member and took the older report for the last one written.
//
// The whole client's case: whether its reads land on the member is the
// bus's draw, so this test alone catches a regression now and then (with
// the sweep's check gone it failed one run in about a dozen, the first
// load then waiting for its watches' checks). Each check is shown alone by
// TestASweepAfterAMemberRestartReadsTheLastReportWritten (here)
// and TestAWatchAfterAMemberRestartSnapshotsWhatTheBucketHolds (inputs/bus).
func TestAClientStartedWhileAMemberCatchesUpPutsTheReportItsFillSays(t *testing.T) {
	cm := newClusterMesh(t)
	cm.putEventually(spec.ConfigBucket, "ace.web.model", "opus")
	cm.putEventually(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	cm.assign("ace", "web", webPlan(), webTemplates)
	f := cm.stateFill()
	onCluster := func(c *Config) { c.Bus.URL = cm.cluster.URLs }
	_, stop := cm.startClient("ace", onCluster, f.socket, refillEvery(200*time.Millisecond))
	cm.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	cm.stateIs("ace", "web", "applied")

	cm.cluster.MissedByAMember(t, cm.js, spec.AppliedBucket, func() {
		f.stop() // the refill finds no fill socket: "failed", which the member misses
		cm.stateIs("ace", "web", "failed")
		stop()
		f.start()
	})

	cm.startClient("ace", onCluster, f.socket)
	cm.stateIs("ace", "web", "applied")
}

// stateIs waits up to 30 s for node.module's report to say state, read
// through a cluster that may be electing leaders (a member stopped or
// started again): a read that fails is tried again.
func (cm *clusterMesh) stateIs(node, module, state string) {
	cm.t.Helper()
	bustest.Eventually(cm.t, 30*time.Second, func() error {
		kv, err := cm.js.KeyValue(context.Background(), spec.AppliedBucket)
		if err != nil {
			return err
		}
		e, err := kv.Get(context.Background(), spec.EncodeKey(node, module))
		if err != nil {
			return err
		}
		var r struct{ State string }
		if err := json.Unmarshal(e.Value(), &r); err != nil || r.State != state {
			return fmt.Errorf("report %s, want state %s", e.Value(), state)
		}
		return nil
	})
}

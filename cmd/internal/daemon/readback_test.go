package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client started while a contributor's plan does not parse, whose bus
// drops in the first seconds (its first Sweep, at the end of the first
// fill's wait, finds the bus away), keeps the item the last run recorded:
// the collect key, the collector's file and its program stay as they are.
// Before, the failed Sweep's empty read was handed to the mesh for good:
// the first fill rewrote the collector's file without the item (its
// program restarted), and once the bus was back the item left the bucket.
func TestAContributorWhosePlanDoesNotParseKeepsItsItemWhenTheBusDropsAsTheClientStarts(t *testing.T) {
	m := newMesh(t)
	b := m.betaRunOnceAndStopped()
	m.put(spec.AssignmentsBucket, "ace.beta", `garbage{`) // broken while the client is down

	swept := strings.Count(m.logs.String(), "not all deleted yet")
	b.restartWaitingForTheVault()
	// The bus drops while the first fill waits: its Sweep fails.
	bustest.Stop(m.s)
	bustest.Eventually(t, 20*time.Second, func() error {
		if strings.Count(m.logs.String(), "not all deleted yet") == swept {
			return fmt.Errorf("the start's Sweep has not failed yet")
		}
		return nil
	})
	m.s = bustest.Start(t, m.again)
	b.v.SetSilent(false) // app's secret answered: the client settles
	b.kept()
}

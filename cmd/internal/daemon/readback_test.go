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
	f := m.stateFill()
	m.contribute("ace", "alpha", "a\n")
	m.contribute("ace", "beta", "export B=1\n")
	m.restartingCollector("ace", "zsh")
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates) // reads a secret: the first fill waits for the vault
	v := m.devVault()
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	const with = "# managed by mesh\n## alpha\na\n## beta\nexport B=1\n"
	m.waitFile("/etc/zsh/zshrc", with)
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "beta", "applied")
	m.settle()
	key := zshKey("ace", "beta")
	item := itemJSON(zshColl, "beta", "export B=1\n")
	rev := m.revision(spec.CollectBucket, key)
	restarts := f.programRestarts()
	stop()
	m.put(spec.AssignmentsBucket, "ace.beta", `garbage{`) // broken while the client is down

	v.SetSilent(true)
	asks := m.watchVaultAsks()
	swept := strings.Count(m.logs.String(), "not all deleted yet")
	d := m.client("ace", f.socket, sameState, func(c *Config) { c.VaultTimeout = 4 * time.Second })
	bustest.Eventually(t, 10*time.Second, func() error {
		if len(asks.times(ownApp)) == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	})
	if d.ready.Load() {
		t.Fatal("the first fill did not wait for the vault")
	}
	// The bus drops while the first fill waits: its Sweep fails.
	bustest.Stop(m.s)
	bustest.Eventually(t, 20*time.Second, func() error {
		if strings.Count(m.logs.String(), "not all deleted yet") == swept {
			return fmt.Errorf("the start's Sweep has not failed yet")
		}
		return nil
	})
	m.s = bustest.Start(t, m.again)
	v.SetSilent(false) // app's secret answered: the client settles

	m.waitFailed("ace", "beta", "the assignment is not JSON")
	m.waitState("ace", "zsh", "applied")
	m.settle()
	if v, ok := m.get(spec.CollectBucket, key); !ok || v != item {
		t.Fatalf("beta's item is %q (there: %v), want %q", v, ok, item)
	}
	if r := m.revision(spec.CollectBucket, key); r != rev {
		t.Errorf("beta's item was written again: revision %d → %d", rev, r)
	}
	if text, _, _ := m.file("/etc/zsh/zshrc"); text != with {
		t.Errorf("the collector's file is %q, want %q", text, with)
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the collector's program was restarted: %q", strings.TrimPrefix(got, restarts))
	}
}

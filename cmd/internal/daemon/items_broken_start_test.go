package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A contributor whose plan parsed in the start's snapshot and stops
// parsing while the first fill waits for the vault's first answers
// (firstLooks) keeps its item as the last run recorded it, as one whose
// plan did not parse in the snapshot does: the collect key, the
// collector's file and its program stay as they are (SPEC §3: the other
// modules are untouched). Before, its item nodes, made from the plan that
// parsed but never computed, were held with no text, and the last run's
// items (ItemsBefore) were not handed to a module that already held some:
// the collector's file was rewritten without it and its program restarted.
func TestAContributorsPlanBrokenDuringTheFirstLookWaitKeepsItsItem(t *testing.T) {
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

	v.SetSilent(true)
	asks := m.watchVaultAsks()
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
	m.put(spec.AssignmentsBucket, "ace.beta", `garbage{`)
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

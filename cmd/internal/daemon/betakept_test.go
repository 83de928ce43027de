package daemon

import (
	"fmt"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// zshWithBeta is ace's collector's file while alpha and beta contribute.
const zshWithBeta = "# managed by mesh\n## alpha\na\n## beta\nexport B=1\n"

// betaKept is what a restart of ace's client must keep of beta's item:
// the collector zsh holding alpha's and beta's items, and app reading a
// secret (so a first fill waits for the vault), run once on a state dir
// and stopped. It says what the last run left: beta's collect key, its
// value and revision, and the collector's program's restarts.
type betaKept struct {
	m         *mesh
	f         *stateFill
	v         *devvault.Vault
	sameState clientOpt
	key, item string
	rev       uint64
	restarts  string
}

// betaRunOnceAndStopped runs ace's client once on such a node, until zsh
// and beta are applied, and stops it.
func (m *mesh) betaRunOnceAndStopped() *betaKept {
	m.t.Helper()
	b := &betaKept{m: m, f: m.stateFill()}
	m.contribute("ace", "alpha", "a\n")
	m.contribute("ace", "beta", "export B=1\n")
	m.restartingCollector("ace", "zsh")
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates) // reads a secret: the first fill waits for the vault
	b.v = m.devVault()
	state := m.t.TempDir()
	b.sameState = func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", b.f.socket, b.sameState)
	m.waitFile("/etc/zsh/zshrc", zshWithBeta)
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "beta", "applied")
	m.settle()
	b.key = zshKey("ace", "beta")
	b.item = itemJSON(zshColl, "beta", "export B=1\n")
	b.rev = m.revision(spec.CollectBucket, b.key)
	b.restarts = b.f.programRestarts()
	stop()
	return b
}

// restartWaitingForTheVault starts ace's client again on its state dir
// with the vault silent, and returns once the vault was asked while the
// first fill waits for its answer.
func (b *betaKept) restartWaitingForTheVault() {
	m := b.m
	m.t.Helper()
	b.v.SetSilent(true)
	asks := m.watchVaultAsks()
	d := m.client("ace", b.f.socket, b.sameState, func(c *Config) { c.VaultTimeout = 4 * time.Second })
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if len(asks.times(ownApp)) == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	})
	if d.ready.Load() {
		m.t.Fatal("the first fill did not wait for the vault")
	}
}

// kept checks, once beta failed for its plan that does not parse and zsh
// is applied, that beta's item, the collector's file and its program are
// as the last run left them.
func (b *betaKept) kept() {
	m := b.m
	m.t.Helper()
	m.waitFailed("ace", "beta", "the assignment is not JSON")
	m.waitState("ace", "zsh", "applied")
	m.settle()
	if v, ok := m.get(spec.CollectBucket, b.key); !ok || v != b.item {
		m.t.Fatalf("beta's item is %q (there: %v), want %q", v, ok, b.item)
	}
	if r := m.revision(spec.CollectBucket, b.key); r != b.rev {
		m.t.Errorf("beta's item was written again: revision %d → %d", b.rev, r)
	}
	if text, _, _ := m.file("/etc/zsh/zshrc"); text != zshWithBeta {
		m.t.Errorf("the collector's file is %q, want %q", text, zshWithBeta)
	}
	if got := b.f.programRestarts(); got != b.restarts {
		m.t.Errorf("the collector's program was restarted: %q", strings.TrimPrefix(got, b.restarts))
	}
}

package daemon

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.1: a value is inserted verbatim and never scanned again, a
// collection's text too. An item whose template escapes a placeholder
// ("$${secret:x}") and whose config value holds one ("${secret:y}") is
// recorded with both as text; the collector's file holds them as they
// are, nothing is asked of the vault, and the collector's file is no
// secret's (mode 0644, a plain digest).
func TestAnItemsTextHoldingPlaceholdersIsCollectedVerbatim(t *testing.T) {
	m := newMesh(t)
	v := m.devVault()
	v.Set(t.Context(), "own/zsh/x", []byte("never"))
	v.Set(t.Context(), "own/zsh/y", []byte("never"))
	m.put(spec.ConfigBucket, "ace.alpha.c", "${secret:y}")
	m.contribute("ace", "alpha", "echo $${secret:x} ${config:c}\n")
	m.collector("ace", "zsh")
	m.client("ace")

	const text = "echo ${secret:x} ${secret:y}\n"
	m.waitValue(spec.CollectBucket, zshKey("ace", "alpha"), itemJSON(zshColl, "alpha", text))
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\n"+text)
	r := m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "alpha", "applied")
	if d := reportDigests(r)["/etc/zsh/zshrc"]; !strings.HasPrefix(d, "sha256:") {
		t.Errorf("digest %q of a file holding no secret", d)
	}
	if got := mode(t, m, "/etc/zsh/zshrc"); got != "0644" {
		t.Errorf("mode %s, want 0644", got)
	}
	m.settle()
	if asks := v.Asks(); len(asks) != 0 {
		t.Errorf("the vault was asked %v", asks)
	}
	for _, mod := range []string{"alpha.", "zsh."} {
		for _, k := range m.needKeys("ace." + mod) {
			if strings.Contains(k, ".secret.") {
				t.Errorf("a need for a secret: %s", k)
			}
		}
	}
}

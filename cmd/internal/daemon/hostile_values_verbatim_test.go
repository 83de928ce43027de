package daemon

import (
	"encoding/json"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A provider's bound value and the vault's secret holding placeholders,
// a NUL, a terminal's escape sequence and a line break are put in the
// file as they are (SPEC §4.1: a value is never scanned again): no need
// appears for what they name, and the vault is asked for the one secret
// the template names, nothing else.
func TestHostileValuesFromAProviderAndTheVaultAreFilledVerbatim(t *testing.T) {
	m := newMesh(t)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/f", Template: "t"}},
		Secrets:    []nodes.SecretSpec{{Name: "api"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"t": "u=${bound:gitea-read:as}|s=${secret:api}|\n"})
	bound := "${secret:other}\x00\x1b[2J$${x}\n${config:model}"
	secret := "${bound:gitea-read:url}\x1b]0;t\x07${secret:api}"
	rv := m.rawVault(func(pub *[32]byte) []byte { return sealedTo(pub, secret) })
	entry, _ := json.Marshal(map[string]any{"state": "bound", "values": map[string]string{"as": bound}})
	if _, err := m.bucket("gitea_bound").Put(t.Context(), "ace.cc.gitea-read", entry); err != nil {
		t.Fatal(err)
	}
	m.client("ace")
	m.waitFile("/etc/cc/f", "u="+bound+"|s="+secret+"|\n")
	m.waitState("ace", "cc", "applied")
	want := map[string]bool{"ace.cc.bound.gitea-read=3Aas": true, "ace.cc.secret.api": true}
	keys := m.needKeys("ace.cc.")
	for _, k := range keys {
		if !want[k] {
			t.Errorf("a need %s for what a value names", k)
		}
	}
	if len(keys) != len(want) {
		t.Errorf("needs %v, want %v", keys, want)
	}
	if n := rv.count(); n != 1 {
		t.Errorf("the vault was asked %d times, want once (for own/cc/api)", n)
	}
}

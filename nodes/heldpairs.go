package nodes

import (
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// pairHeldFor is the provider a consumer's pair/ credential is held for
// while no consumers list reads it (its provider's plan moving to a new
// templates archive rebuilds the list): the provider, as long as the
// consumer's plan still binds it (the credential's provider, provision
// and local), else "". Held, the value comes back to the rebuilt list
// without an ask, so a vault down meanwhile takes no consumer out of it,
// as a module's own secret is held while the module is here (heldFor).
func (m *NodeGraph) pairHeldFor(v spec.VaultName) string {
	a := m.assignments[spec.EncodeKey(v.Node, v.Module)]
	if a == nil {
		return ""
	}
	pk := v.Provider + "/" + v.Provision
	for _, b := range a.binds {
		if b.is(pk) && b.local == v.Local {
			return v.Provider
		}
	}
	return ""
}

// dropUnbound forgets the credentials held with no list reading them of
// old's bindings that its plan no longer names (now's): held no longer
// for anyone (pairHeldFor), and a leaf made later asks anew.
func (m *NodeGraph) dropUnbound(old *heldBinds, oldBinds, newBinds map[string][]string) {
	for pk, locals := range oldBinds {
		provider, provision, _ := strings.Cut(pk, "/")
		for _, l := range locals {
			if slices.Contains(newBinds[pk], l) {
				continue
			}
			name := spec.PairSecretName(provider, provision, old.node, old.module, l)
			if _, held := m.secrets[name]; held && m.existing(KindVault, name) == nil {
				delete(m.secrets, name)
			}
		}
	}
}

package nodes

import "github.com/novox/mesh-provisioner/nodes/spec"

// pairsRead is the vault names of the consumers' credentials (pair/…) the
// assignment at key binds that this node already reads (a vault leaf is
// there): those the vault may have refused. A binding new in this write
// has none yet, and is asked as a new name anyway. A client reads every
// assignment of the mesh: a name is built only for an entry whose
// provision a consumers list of this node reads (its bindings leaf).
func (m *NodeGraph) pairsRead(key string) []string {
	h := m.assignments[key]
	if h == nil {
		return nil
	}
	var out []string
	for _, b := range h.binds {
		if m.existing(KindBindings, b.provider+"/"+b.provision) == nil {
			continue
		}
		name := spec.PairSecretName(b.provider, b.provision, h.node, h.module, b.local)
		if m.existing(KindVault, name) != nil {
			out = append(out, name)
		}
	}
	return out
}

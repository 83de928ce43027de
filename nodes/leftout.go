package nodes

import "github.com/novox/mesh-provisioner/graph"

// LeftOut is a consumer a consumers list leaves out, and why.
type LeftOut struct {
	Vault string      // the consumer's credential's vault name
	Leaf  *graph.Node // its vault leaf
	Why   string
}

// ConsumersLeftOut are the consumers the consumers lists file reads leave
// out (SPEC §4.5: their credential not in the vault, refused, not text),
// for explain: the log said each once, and an operator asking why a
// consumer cannot reach its provider found nothing else that did (an
// outside audit: the list's file "met", the consumer applied).
func (m *NodeGraph) ConsumersLeftOut(file *graph.Node) []LeftOut {
	var out []LeftOut
	for _, need := range file.Inputs() {
		for _, c := range need.Inputs() {
			if c.Key().Kind != KindConsumers {
				continue
			}
			for i, leaf := range c.Inputs() {
				if i == 0 || leaf.Key().Kind != KindVault {
					continue // the bindings
				}
				lo := LeftOut{Vault: leaf.Key().Name, Leaf: leaf}
				switch v, _ := leaf.Value().([]byte); {
				case leaf.State() != graph.Ready:
					lo.Why = leaf.Why()
				case !ListableCredential(v):
					lo.Why = "its credential is not UTF-8 text, which a consumers list cannot carry"
				default:
					continue
				}
				out = append(out, lo)
			}
		}
	}
	return out
}

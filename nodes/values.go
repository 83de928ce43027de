package nodes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
)

// Graph node kinds the provisioner uses (graph.Key.Kind).
const (
	KindPlan       = "plan"       // input: the module's plan and templates are usable (or why not)
	KindArchive    = "archive"    // input: the module's templates archive is here
	KindPlacement  = "placement"  // input: placement.<kind>.<name> of a plan
	KindConfig     = "config"     // no node: mesh-config_resolved <node>.<module>.<key>, behind a config need (config.go)
	KindRegistry   = "registry"   // input: mesh-provisioner_registry <kind>
	KindVault      = "vault"      // input (secret): a vault name's value
	KindBound      = "bound"      // input: <provider>_bound <node>.<module>.<provision>[.<local>]
	KindBindings   = "bindings"   // input: the consumers bound to a provider for a provision
	KindOffers     = "offers"     // input: a provider's provides[], from its plan
	KindOffer      = "offer"      // how a binding to a provider's offer is judged
	KindNeed       = "need"       // a placeholder's value
	KindFile       = "file"       // a rendered file
	KindItem       = "item"       // a rendered collection item
	KindCollection = "collection" // the items of a collection on this node
	KindConsumers  = "consumers"  // a provider's consumers list
	KindModule     = "module"     // every file and item of a module
)

// FileValue is a rendered file, ready for the fill socket.
type FileValue struct {
	Module  string
	Spec    *FileSpec // mode already defaulted; shared by the file's values (never changed)
	Content []byte
	Secret  bool // holds a secret or a consumers list
}

// Equal is the cutoff: same bytes, same spec.
func (f *FileValue) Equal(o any) bool {
	g, ok := o.(*FileValue)
	return ok && (f.Spec == g.Spec || f.Spec != nil && g.Spec != nil && *f.Spec == *g.Spec) &&
		f.Secret == g.Secret && bytes.Equal(f.Content, g.Content)
}

// Digest is sha256:<hex> of the content.
func (f *FileValue) Digest() string {
	s := sha256.Sum256(f.Content)
	return "sha256:" + hex.EncodeToString(s[:])
}

// ItemText is one contributor's item in a collection.
type ItemText struct {
	Contributor string
	Text        []byte
}

// BoundEntry is the value of a <provider>_bound key (SPEC §4.6).
type BoundEntry struct {
	State  string            `json:"state"`
	Values map[string]string `json:"values"`
	Reason string            `json:"reason"`
}

// Binding is one consumer bound to a provider for a provision (SPEC §4.5).
type Binding struct {
	Consumer   string `json:"consumer"` // the consumer's node
	Module     string `json:"module"`
	Local      string `json:"local"`
	Credential string `json:"credential"` // the pair/… vault name
}

package nodes

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/novox/mesh-provisioner/graph"
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

// FileValue is a rendered file's value: what the cutoff compares (its
// spec and the sha256 of its bytes) and how to have its bytes again. A
// templated file's value does not keep its bytes for good (issue 20: they
// were ~712 bytes a file of the client's heap, held only for the refill
// and a change's compare): they are held from its render until the output
// stage takes them into a fill request (Take), and rendered again from its
// node when it needs them later (a retry, the refill, a whole request).
// Holding them until taken costs the value 16 bytes (80, not 64); not
// holding them rendered every changed file twice, which measured ~10 %
// more client CPU a change (modules=500x1) and more at the cold start.
//
// 80 bytes, an allocation size class: its module is its node's (a field
// for it took the value to 96).
type FileValue struct {
	Spec   *FileSpec // mode already defaulted; shared by the file's values (never changed)
	Secret bool      // holds a secret or a consumers list
	size   int32     // len of the bytes (at most 16 MiB): the module's budget counts it (budget.go); beside Secret, the value stays 80 bytes
	sum    [sha256.Size]byte
	// held is the bytes: a value without a node holds them for its life
	// (a secret-only file holds its secret leaf's own bytes, no copy); a
	// templated file's from its render until Take.
	held []byte
	node *graph.Node // the file node whose value this is, to render the bytes again; nil: held for good
}

// NewFileValue is a file's value that holds content for its life.
func NewFileValue(spec *FileSpec, content []byte, secret bool) *FileValue {
	return &FileValue{Spec: spec, Secret: secret, size: int32(len(content)), sum: sha256.Sum256(content), held: content}
}

// Equal is the cutoff: the same sum of bytes, the same spec.
func (f *FileValue) Equal(o any) bool {
	g, ok := o.(*FileValue)
	return ok && (f.Spec == g.Spec || f.Spec != nil && g.Spec != nil && *f.Spec == *g.Spec) &&
		f.Secret == g.Secret && f.sum == g.sum
}

// Digest is sha256:<hex> of the content. Not a secret-bearing file's to
// show: its report keys its digest (the output stage's secretDigest).
func (f *FileValue) Digest() string {
	return "sha256:" + hex.EncodeToString(f.sum[:])
}

// ErrRenderedOther says a file rendered again did not give the bytes its
// value is the sum of: its node's inputs moved without a stabilization,
// or the value is no longer its node's. Its bytes are not to be sent.
var ErrRenderedOther = errors.New("rendered again, it is not the file its value sums (not sent; tried again)")

// Bytes is the file's content: the bytes held, or else rendered again
// from its node and checked against the sum. Only on the goroutine that
// owns the graph, with the graph stable (after a Stabilize, nothing set
// since). The error never holds the bytes.
func (f *FileValue) Bytes() ([]byte, error) {
	if f.held != nil || f.node == nil {
		return f.held, nil
	}
	fn, _ := f.node.Meta.(*fileNode)
	if fn == nil || f.node.State() != graph.Ready || f.node.Value() != any(f) {
		return nil, fmt.Errorf("file %s: %w", f.Spec.Path, ErrRenderedOther)
	}
	fn.counts.Again.Add(1)
	b, err := fn.r.render(graph.InOf(f.node))
	if err != nil {
		return nil, fmt.Errorf("file %s: rendered again: %w", f.Spec.Path, err)
	}
	if sha256.Sum256(b) != f.sum {
		return nil, fmt.Errorf("file %s: %w", f.Spec.Path, ErrRenderedOther)
	}
	return b, nil
}

// Take is Bytes, and lets a templated file's value go of the bytes it
// holds: from now on they are rendered again when asked for. The output
// stage takes them into a fill request, which holds them until answered.
func (f *FileValue) Take() ([]byte, error) {
	b, err := f.Bytes()
	if f.node != nil {
		f.held = nil
	}
	return b, err
}

// Release lets a templated file's value go of the bytes it holds without
// taking them: the output stage releases those of a module whose fill
// waits its turn (a cold start's thousand modules, eight at a time), and
// renders them again when it is sent.
func (f *FileValue) Release() {
	if f.node != nil {
		f.held = nil
	}
}

// Held says the value holds its bytes now (for tests of Take).
func (f *FileValue) Held() bool { return f.held != nil }

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

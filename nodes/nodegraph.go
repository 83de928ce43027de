package nodes

import (
	"sort"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// NodeGraph is the provisioner's graph for one node: every assignment, config
// value, registry entry, secret, binding and templates archive the node's
// client knows is an input, and every placeholder, file, item, collection,
// consumers list and module of the node's own modules is a node computed
// from them. It does no I/O: the daemon feeds it what the bus says and acts
// on what Stabilize reports. Like the graph, it is owned by one goroutine.
type NodeGraph struct {
	node string
	g    *graph.Graph
	mods map[string]*module
	// overBudget: modules' budgets that refused a file since the last
	// retryBudgets (budget.go).
	overBudget []*renderBudget

	// What the sources said; a leaf made later starts from it.
	config     map[string][]byte // by bucket key, values no leaf holds (config.go)
	configRoom int               // the most m.config held since it was made
	configReg  struct {          // the registry's answer for kind config
		ok  bool
		why string
	}
	configMissing   bool
	registry        map[string][]byte // by kind
	registryMissing bool
	bound           map[string]map[string][]byte // bucket → key → value
	boundMissing    map[string]bool
	notPermitted    map[string]bool // buckets the bus refuses this client
	secrets         map[string]secretSource
	quoted          map[string]bool          // QuotesSecret's answers, until a secret moves
	archives        map[string]archiveSource // by module
	readyArchive    map[string]string        // digest → a module its archive was set ready for (checked when read: shareArchive)
	digestNamed     map[string]int           // templates digest → how many of this node's plans name it (KeepsArchive)

	// What every assignment on every node binds, for consumers lists
	// (only those with a provisions entry: heldbinds.go).
	assignments map[string]*heldBinds
	bindings    map[string]map[string]bool     // provider/provision → assignment keys naming it
	offerKeys   map[string]map[string]offersAt // provider module → its assignment keys → what each offers
	offerFirst  map[string]string              // provider module → the first of its keys in byte order (offersOf)
	// consumersDirty: the provider/provisions whose consumers moved since
	// the last flushConsumers (consumersMoved).
	consumersDirty map[string]bool
	// consumersHeld: the consumers lists whose value waits for the
	// vault's answers (consumershold.go).
	consumersHeld consumersHold
	// unparsedKeys: assignment key → its module, for each whose value does
	// not parse (its bindings and offers kept: keptplans.go); plansBefore:
	// what the last run kept, until the first stabilization; keptMoved:
	// KeptPlans has news.
	unparsedKeys map[string]string
	plansBefore  map[string]KeptPlan
	keptMoved    bool

	collItems map[string]map[string]*graph.Node // collection → contributor → item node
	// itemsKept: item node → its text when it was last ready, which the
	// collect bucket still holds while the item waits (SPEC §4.4: a
	// collection is the items recorded). Kept by Stabilize; forgotten when
	// the item fails (deleted from the bucket) or its node goes. Never a
	// secret: an item names none (checkPlaceholders).
	itemsKept  map[*graph.Node][]byte
	parsed     map[string]map[string]parsedTemplate // archive digest → member → parsed template
	boundUse   map[string]map[*graph.Node]bool      // provider bucket → the bound leaves reading it
	boundRead  map[string]bool                      // provider buckets read since watched (boundread.go)
	unreadHeld map[string]bool                      // modules held until such a bucket is read (HoldUnread)
	// archiveWanted: modules whose plan moved to an archive not held yet,
	// and since when (archiveheld.go; HoldUnread holds them too).
	archiveWanted map[string]time.Time
	renders       RenderCounts
	claims        claims // what each module writes, for the clash check

	newSecrets  []string
	newArchives []ArchiveWant

	// noPlan: this node's modules whose assignment carries no
	// "provisioning" (SPEC §3 r2): not modules here, yet assigned
	// (AssignedWithoutPlan).
	noPlan map[string]bool

	// itemLimit: the bus's limit on one message, which an item's record
	// must fit (itemrecord.go); nil: not known.
	itemLimit func() int64

	// nearMiss: bucket → key as SPEC §2.1 writes it → a key out of shape
	// under this node that reads as it (nearmiss.go).
	nearMiss map[string]map[string]nearMissKey
}

type secretSource struct {
	state graph.State
	value []byte
	why   string
	asked time.Time // when the ask this answer (value, absence, refusal) answered was made
	// answered: the vault's own answer (sealed, absent, refused), not a
	// silence or an error on the way (VaultAnswered).
	answered bool
	// before: the last value held before this answer, which files on disk
	// may still hold (a refusal, a rotation not filled yet); first: the
	// first held in this run, which a seed file keeps: QuotesSecret looks
	// for both too.
	before, first []byte
}

type archiveSource struct {
	digest  string
	state   graph.State
	members map[string][]byte
	why     string
	tried   time.Time // when the fetch whose outcome this is was tried
}

// ArchiveWant asks the daemon to fetch a module's templates archive.
type ArchiveWant struct{ Module, Ref, Digest string }

// NewNodeGraph makes the graph of node's client.
func NewNodeGraph(node string) *NodeGraph {
	m := &NodeGraph{
		node: node, g: graph.New(), mods: map[string]*module{},
		config: map[string][]byte{}, registry: map[string][]byte{},
		bound: map[string]map[string][]byte{}, boundMissing: map[string]bool{}, notPermitted: map[string]bool{},
		boundUse: map[string]map[*graph.Node]bool{}, boundRead: map[string]bool{}, unreadHeld: map[string]bool{},
		secrets: map[string]secretSource{}, archives: map[string]archiveSource{},
		assignments: map[string]*heldBinds{}, bindings: map[string]map[string]bool{}, offerKeys: map[string]map[string]offersAt{}, offerFirst: map[string]string{},
		unparsedKeys: map[string]string{},
		collItems:    map[string]map[string]*graph.Node{}, itemsKept: map[*graph.Node][]byte{},
		parsed: map[string]map[string]parsedTemplate{},
		noPlan: map[string]bool{},
	}
	m.configReg.ok, m.configReg.why = m.registryAnswer(string(spec.Config))
	return m
}

// Graph is the engine underneath (for explain, DOT and counters).
func (m *NodeGraph) Graph() *graph.Graph { return m.g }

// Node is the node this mesh is for.
func (m *NodeGraph) Node() string { return m.node }

// Modules lists this node's modules, sorted.
func (m *NodeGraph) Modules() []string {
	out := make([]string, 0, len(m.mods))
	for name := range m.mods {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// HasModule says whether module is assigned to this node.
func (m *NodeGraph) HasModule(module string) bool { return m.mods[module] != nil }

// AssignedWithoutPlan says module's assignment to this node is there but
// carries no "provisioning" (SPEC §3 r2): it is assigned, just not the
// provisioner's, so HasModule is false. prov.ask says so rather than "not
// assigned".
func (m *NodeGraph) AssignedWithoutPlan(module string) bool { return m.noPlan[module] }

func (m *NodeGraph) notingNoPlan(module string, none bool) {
	if none {
		m.noPlan[module] = true
	} else {
		delete(m.noPlan, module)
	}
}

// Origin says where a node's value comes from, for explain.
type Origin struct {
	Module      string `json:"module,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Path        string `json:"path,omitempty"`
	Collection  string `json:"collection,omitempty"`
	Bucket      string `json:"bucket,omitempty"`
	Key         string `json:"key,omitempty"`
	Vault       string `json:"vault,omitempty"`
	Rule        string `json:"rule,omitempty"` // offer: how a binding to it is judged
}

// OriginOf says where n's value comes from; nil for a node the mesh did not
// make. Need and file nodes, most of a graph, keep no Origin of their own
// (one each is megabytes on a large node): a need node's Meta is its
// module, its placeholder the rest of its key; a templated file's is its
// fileNode.
func OriginOf(n *graph.Node) *Origin {
	switch o := n.Meta.(type) {
	case *Origin:
		return o
	case *module:
		return &Origin{Module: o.name, Placeholder: n.Key().Name[len(o.name)+1:]}
	case *fileNode:
		return &Origin{Module: o.r.module, Path: o.spec.Path}
	}
	return nil
}

// filePath is the path of file node n.
func filePath(n *graph.Node) string {
	if f, ok := n.Meta.(*fileNode); ok {
		return f.spec.Path
	}
	return n.Meta.(*Origin).Path
}

// moduleOf is the module n was made for ("" for none), without building its
// Origin. A config leaf's module is not needed by its callers: it says "".
func moduleOf(n *graph.Node) string {
	switch o := n.Meta.(type) {
	case *Origin:
		return o.Module
	case *module:
		return o.name
	case *fileNode:
		return o.r.module
	}
	return ""
}

// leaf returns the input keyed (kind, name), making it with init when new.
func (m *NodeGraph) leaf(kind, name string, origin any, init func(*graph.Node)) *graph.Node {
	k := graph.Key{Kind: kind, Name: name}
	if n := m.g.Node(k); n != nil {
		return n
	}
	n, err := m.g.Input(k)
	if err != nil {
		panic(err) // keys of inputs and derived nodes never collide: kinds differ
	}
	n.Meta = origin
	init(n)
	return n
}

// set makes leaf n say (state, value, why).
func (m *NodeGraph) set(n *graph.Node, s graph.State, v any, why string) {
	switch s {
	case graph.Ready:
		m.g.Set(n, v)
	case graph.Waiting:
		m.g.SetWaiting(n, why)
	default:
		m.g.SetFailed(n, why)
	}
}

func (m *NodeGraph) existing(kind, name string) *graph.Node {
	return m.g.Node(graph.Key{Kind: kind, Name: name})
}

// WantsArchive says whether w's module's plan still names w's archive, by
// ref and digest (a fetch for a plan that moved on is dropped). An archive
// got from an older ref is still used if its digest is the plan's
// (setArchive).
// KeepsArchive says whether the archive a fetch w got is still to be kept:
// its module still wants it (WantsArchive), or another plan of this node
// names its digest. A module given another's archive (shareArchive)
// fetched none of its own, so the archive stays while any plan names it
// (the daemon's fetcher and cache keep by it).
func (m *NodeGraph) KeepsArchive(w ArchiveWant) bool {
	return m.WantsArchive(w) || m.digestNamed[w.Digest] > 0
}

// nameDigest counts asg's templates digest by n (+1: a plan names it, -1:
// no longer).
func (m *NodeGraph) nameDigest(asg *Assignment, n int) {
	if asg == nil {
		return
	}
	d := asg.Provisioning.Templates.Digest
	if m.digestNamed == nil {
		m.digestNamed = map[string]int{}
	}
	if m.digestNamed[d] += n; m.digestNamed[d] <= 0 {
		delete(m.digestNamed, d)
	}
}

func (m *NodeGraph) WantsArchive(w ArchiveWant) bool {
	mod := m.mods[w.Module]
	if mod == nil || mod.asg == nil {
		return false
	}
	t := mod.asg.Provisioning.Templates
	return t.Digest == w.Digest && t.Ref == w.Ref
}

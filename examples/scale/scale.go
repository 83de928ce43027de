package scale

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Config sizes a synthetic mesh.
type Config struct {
	Nodes        int // N
	Modules      int // M, per node
	Files        int // F, per module
	Placeholders int // P, per file
	Contributors int // C: modules of a node contributing to one collection (default 10)
	Consumers    int // K: modules bound to one provider (default 100)
	// ArchiveRef gives the templates.ref of an archive by name (default
	// obj://mesh-artifacts/<name>.tar.gz).
	ArchiveRef func(name string) string
}

// The mix: of every 20 placeholder slots, 12 are config (60%), 4
// placement (20%), 1 secret, 1 bound, 1 collected and 1 consumers (5% each).
// Slot s (counted over a module's files in order) takes mix[s%20], so the mix
// is exact over every 20 slots.
var mix = [20]string{
	"config", "config", "config", "config", "config", "config", "config", "config", "config", "config", "config", "config",
	"placement", "placement", "placement", "placement",
	"secret", "bound", "collected", "consumers",
}

// placementKinds are the kinds the plan's placement answers, in the order
// of the table of kinds.
var placementKinds = spec.KindsFrom(spec.FromPlacement)

// The names every generated plan uses.
const (
	Provision   = "svc"  // every module provides it and binds to its provider for it
	SecretName  = "s0"   // every module's own secret
	BoundKey    = "url"  // the value a bound entry holds
	ItemKey     = "item" // the config key a module's item renders
	commonKeys  = 8      // config keys common-0..7, each read by files f with f%8 == i
	placeNames  = 4      // placement names per kind
	Comment     = "#"
	itemMember  = "item.tmpl"
	defaultC    = 10
	defaultK    = 100
	archiveBase = "obj://mesh-artifacts/"
)

// Mesh is a generated mesh.
type Mesh struct {
	Config      Config
	Assignments []nodes.Assignment // node by node, module by module
	// Archives: archive name → tar.gz bytes; Templates: archive name → member → text.
	Archives  map[string][]byte
	Templates map[string]map[string][]byte
	// ConfigValues: mesh-config_resolved key <node>.<module>.<key> → value.
	ConfigValues map[string][]byte
	// Bound: bucket <provider>_bound → key <node>.<module>.svc → entry JSON.
	Bound map[string]map[string][]byte
	// Secrets: vault name → value (own secrets and consumers' pair credentials).
	Secrets map[string][]byte

	groups []*group // by collection group (module index / C)
}

// group is the templates shared by modules of the same index group: the
// same module index on every node, and C neighbouring indexes.
type group struct {
	archive string
	tmpls   []*nodes.Template // by file
	item    *nodes.Template
	deps    map[string][]int  // config key → files naming it
	kinds   []map[string]bool // by file: the kinds it names
}

// NodeName is node n's name.
func NodeName(n int) string { return fmt.Sprintf("node-%03d", n) }

// ModuleName is module i of node n (module names are unique in the mesh,
// so a provider's consumers are exactly K).
func ModuleName(n, i int) string { return fmt.Sprintf("n%03d-m%04d", n, i) }

// FilePath is file f of a module.
func FilePath(module string, f int) string { return fmt.Sprintf("/etc/%s/f%04d.conf", module, f) }

// Collection is the collection module index i contributes to and collects.
func (m *Mesh) Collection(i int) string { return fmt.Sprintf("coll-%d", i/m.Config.Contributors) }

// Provider is the provider module of the module at global index gi
// (n*M+i): the first module of its group of K.
func (m *Mesh) Provider(gi int) string {
	p := gi / m.Config.Consumers * m.Config.Consumers
	return ModuleName(p/m.Config.Modules, p%m.Config.Modules)
}

// Generate builds the mesh cfg describes.
func Generate(cfg Config) (*Mesh, error) {
	if cfg.Nodes < 1 || cfg.Modules < 1 || cfg.Files < 1 || cfg.Placeholders < 1 {
		return nil, fmt.Errorf("scale: nodes, modules, files and placeholders must be at least 1 (got %d, %d, %d, %d)",
			cfg.Nodes, cfg.Modules, cfg.Files, cfg.Placeholders)
	}
	if cfg.Files >= spec.MaxArchiveMembers {
		return nil, fmt.Errorf("scale: %d files per module is over the archive limit of %d members", cfg.Files, spec.MaxArchiveMembers)
	}
	if cfg.Contributors <= 0 {
		cfg.Contributors = defaultC
	}
	if cfg.Consumers <= 0 {
		cfg.Consumers = defaultK
	}
	if cfg.ArchiveRef == nil {
		cfg.ArchiveRef = func(name string) string { return archiveBase + name + ".tar.gz" }
	}
	m := &Mesh{Config: cfg, Archives: map[string][]byte{}, Templates: map[string]map[string][]byte{},
		ConfigValues: map[string][]byte{}, Bound: map[string]map[string][]byte{}, Secrets: map[string][]byte{}}
	digests := map[string]string{}
	for g := 0; g*cfg.Contributors < cfg.Modules; g++ {
		gr, members, err := m.makeGroup(g)
		if err != nil {
			return nil, err
		}
		data, digest, err := TarGz(members)
		if err != nil {
			return nil, err
		}
		m.groups = append(m.groups, gr)
		m.Archives[gr.archive], m.Templates[gr.archive], digests[gr.archive] = data, members, digest
	}
	for n := 0; n < cfg.Nodes; n++ {
		node := NodeName(n)
		for i := 0; i < cfg.Modules; i++ {
			gi := n*cfg.Modules + i
			name := ModuleName(n, i)
			gr := m.groups[i/cfg.Contributors]
			a := nodes.Assignment{Node: node, Module: name, Provisioning: m.plan(name, i, gi, gr, digests[gr.archive])}
			m.Assignments = append(m.Assignments, a)
			for key := range gr.deps {
				m.ConfigValues[spec.EncodeKey(node, name, key)] = []byte(ConfigValue(name, key, 0))
			}
			m.ConfigValues[spec.EncodeKey(node, name, ItemKey)] = []byte(ConfigValue(name, ItemKey, 0))
			m.Secrets[spec.OwnSecretName(name, SecretName)] = []byte("secret of " + name)
			prov := m.Provider(gi)
			m.Secrets[spec.PairSecretName(prov, Provision, node, name, "")] = []byte("pair of " + name)
			bucket := spec.BoundBucket(prov)
			if m.Bound[bucket] == nil {
				m.Bound[bucket] = map[string][]byte{}
			}
			e, _ := json.Marshal(nodes.BoundEntry{State: "bound", Values: map[string]string{BoundKey: "https://" + prov + ".mesh/" + name}})
			m.Bound[bucket][spec.BoundKey(node, name, Provision, "")] = e
		}
	}
	return m, nil
}

// ConfigValue is the value of a module's config key at version v.
func ConfigValue(module, key string, v int) string {
	return fmt.Sprintf("%s of %s v%d", key, module, v)
}

func (m *Mesh) plan(name string, i, gi int, gr *group, digest string) nodes.Plan {
	cfg := m.Config
	p := nodes.Plan{
		Templates:   nodes.TemplatesRef{Ref: cfg.ArchiveRef(gr.archive), Digest: digest},
		Placement:   map[string]map[string]string{},
		Secrets:     []nodes.SecretSpec{{Name: SecretName}},
		Provisions:  []nodes.ProvisionSpec{{Provision: Provision, Provider: m.Provider(gi), Credential: "token"}},
		Provides:    []nodes.Offer{{Provision: Provision}},
		Items:       []nodes.ItemSpec{{Collection: m.Collection(i), Template: itemMember}},
		Collections: []nodes.CollectionSpec{{Name: m.Collection(i), Comment: Comment}},
	}
	for _, k := range placementKinds {
		p.Placement[string(k)] = map[string]string{}
		for j := 0; j < placeNames; j++ {
			p.Placement[string(k)][fmt.Sprintf("a%d", j)] = fmt.Sprintf("%s-%s-a%d", k, name, j)
		}
	}
	for f := 0; f < cfg.Files; f++ {
		p.Files = append(p.Files, nodes.FileSpec{Path: FilePath(name, f), Template: memberName(f),
			Form: nodes.FormOwned, OnChange: nodes.OnChange{Action: "none"}})
	}
	return p
}

func memberName(f int) string { return fmt.Sprintf("f%04d.tmpl", f) }

// makeGroup writes the templates of group g: file f's placeholder slot q is
// slot s = f*P+q of the node's mix.
func (m *Mesh) makeGroup(g int) (*group, map[string][]byte, error) {
	cfg := m.Config
	gr := &group{archive: fmt.Sprintf("scale-g%d-f%d-p%d", g, cfg.Files, cfg.Placeholders), deps: map[string][]int{}}
	members := map[string][]byte{}
	coll := fmt.Sprintf("coll-%d", g)
	for f := 0; f < cfg.Files; f++ {
		text := fmt.Sprintf("# file %d of group %d\n", f, g)
		kinds := map[string]bool{}
		nconfig := 0
		for q := 0; q < cfg.Placeholders; q++ {
			kind := mix[(f*cfg.Placeholders+q)%len(mix)]
			var ph string
			switch kind {
			case "config":
				key := fmt.Sprintf("f%d-%d", f, nconfig)
				if nconfig == 0 {
					key = fmt.Sprintf("common-%d", f%commonKeys)
				}
				nconfig++
				if l := gr.deps[key]; len(l) == 0 || l[len(l)-1] != f {
					gr.deps[key] = append(gr.deps[key], f)
				}
				ph = "${config:" + key + "}"
			case "placement":
				k := placementKinds[(f+q)%len(placementKinds)]
				ph = fmt.Sprintf("${%s:a%d}", k, (f+q)%placeNames)
			case "secret":
				ph = "${secret:" + SecretName + "}"
			case "bound":
				ph = "${bound:" + Provision + ":" + BoundKey + "}"
			case "collected":
				ph = "${collected:" + coll + "}"
			case "consumers":
				ph = "${consumers:" + Provision + "}"
			}
			kinds[kind] = true
			text += fmt.Sprintf("slot%d = %s\n", q, ph)
		}
		t, err := nodes.ParseTemplate(memberName(f), []byte(text))
		if err != nil {
			return nil, nil, fmt.Errorf("scale: generated template %s: %w", memberName(f), err)
		}
		gr.tmpls = append(gr.tmpls, t)
		gr.kinds = append(gr.kinds, kinds)
		members[memberName(f)] = []byte(text)
	}
	item := "contribution = ${config:" + ItemKey + "}\n"
	t, err := nodes.ParseTemplate(itemMember, []byte(item))
	if err != nil {
		return nil, nil, fmt.Errorf("scale: generated item template: %w", err)
	}
	gr.item = t
	members[itemMember] = []byte(item)
	return gr, members, nil
}

// Dependents are the paths of module i's files (on any node) that name
// config key; for the item key, the files naming the collection the
// module contributes to, on every module of the group.
func (m *Mesh) Dependents(n, i int, key string) []string {
	gr := m.groups[i/m.Config.Contributors]
	var out []string
	if key == ItemKey {
		for j := i / m.Config.Contributors * m.Config.Contributors; j < min(m.Config.Modules, (i/m.Config.Contributors+1)*m.Config.Contributors); j++ {
			for f := range gr.kinds {
				if gr.kinds[f]["collected"] {
					out = append(out, FilePath(ModuleName(n, j), f))
				}
			}
		}
		sort.Strings(out)
		return out
	}
	for _, f := range gr.deps[key] {
		out = append(out, FilePath(ModuleName(n, i), f))
	}
	return out
}

// ConfigKeys lists the config keys module index i's files name, sorted.
func (m *Mesh) ConfigKeys(i int) []string {
	gr := m.groups[i/m.Config.Contributors]
	out := make([]string, 0, len(gr.deps))
	for k := range gr.deps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Kinds says which kinds file f of module index i names.
func (m *Mesh) Kinds(i, f int) map[string]bool { return m.groups[i/m.Config.Contributors].kinds[f] }

// Mix counts the placeholder slots of one node by kind.
func (m *Mesh) Mix() map[string]int {
	out := map[string]int{}
	for i := 0; i < m.Config.Modules; i++ {
		for f := 0; f < m.Config.Files; f++ {
			for q := 0; q < m.Config.Placeholders; q++ {
				out[mix[(f*m.Config.Placeholders+q)%len(mix)]]++
			}
		}
	}
	return out
}

// Files is how many files a node has.
func (m *Mesh) FilesPerNode() int { return m.Config.Modules * m.Config.Files }

package chaos

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"

	"github.com/novox/mesh-provisioner/examples"
	"github.com/novox/mesh-provisioner/examples/scale"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// chaosNodes are the run's nodes: the example mesh's two, which the
// generated mesh's two nodes are mapped onto, so two clients carry both.
var chaosNodes = []string{"ace", "g14"}

// keptWaiting is the example module that waits by design (its config key
// is never written): churn leaves it alone.
const keptWaiting = "g14.grafana"

// world is the meshes' inputs as the driver last wrote them: what it
// churns, what the heal puts back, what the leak scan looks for.
type world struct {
	archives map[string][]byte                      // object name in mesh-artifacts → tar.gz
	base     map[string]nodes.Assignment            // assignment key → the plan as generated
	variant  map[string]int                         // assignment key → plan variant now (see planVariant)
	assigned map[string]bool                        // assignment key → on the bus now
	config   map[string]string                      // config key → value
	deleted  map[string]bool                        // config keys deleted now
	bound    map[string]map[string]nodes.BoundEntry // as generated
	boundNow map[string]map[string][]byte           // as last written
	unbound  map[string]bool                        // "<bucket> <key>" deleted now
	secrets  map[string]string
	// leftover: paths of any plan written seed or managed-keys, or given a
	// stand-in: mesh-fill leaves them when their module goes (SPEC §4.3).
	leftover map[string]bool
	// standIns: path → the text a managed file starts from on every node.
	standIns map[string]string
	// generated: the assignment keys of the generated mesh (plan changes
	// and offers churn only those).
	generated map[string]bool
}

// newWorld is the lab's example mesh plus a generated one (every
// placeholder kind, collections of 3 contributors, providers of 4
// consumers across both nodes).
func newWorld() (*world, error) {
	w := &world{archives: map[string][]byte{}, base: map[string]nodes.Assignment{}, variant: map[string]int{},
		assigned: map[string]bool{}, config: map[string]string{}, deleted: map[string]bool{},
		bound: map[string]map[string]nodes.BoundEntry{}, unbound: map[string]bool{}, secrets: map[string]string{},
		leftover: map[string]bool{}, standIns: map[string]string{}, generated: map[string]bool{}}
	meshFS, err := fs.Sub(examples.Files, "mesh")
	if err != nil {
		return nil, err
	}
	m, err := examples.LoadMesh(meshFS)
	if err != nil {
		return nil, err
	}
	for _, key := range slices.Sorted(maps.Keys(m.Assignments)) {
		module := strings.SplitN(key, ".", 2)[1]
		name := module + ".tar.gz"
		data, digest, err := m.Archive(module)
		if err != nil {
			return nil, err
		}
		w.archives[name] = data
		raw, err := m.WithTemplates(key, "obj://"+spec.ArtifactsStore+"/"+name, digest)
		if err != nil {
			return nil, err
		}
		var a nodes.Assignment
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("example assignment %s: %w", key, err)
		}
		w.base[key] = a
	}
	maps.Copy(w.config, m.Config)
	for bucket, entries := range m.Bound {
		w.bound[bucket] = map[string]nodes.BoundEntry{}
		for k, raw := range entries {
			var e nodes.BoundEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, fmt.Errorf("example bound %s %s: %w", bucket, k, err)
			}
			w.bound[bucket][k] = e
		}
	}
	maps.Copy(w.secrets, m.Secrets)

	g, err := scale.Generate(scale.Config{Nodes: 2, Modules: 10, Files: 4, Placeholders: 5, Contributors: 3, Consumers: 4})
	if err != nil {
		return nil, err
	}
	rename := func(s string) string { // node-000 → ace, node-001 → g14
		for i, n := range chaosNodes {
			s = strings.ReplaceAll(s, scale.NodeName(i), n)
		}
		return s
	}
	for name, data := range g.Archives {
		w.archives[name+".tar.gz"] = data
	}
	for _, a := range g.Assignments {
		a.Node = rename(a.Node)
		key := spec.EncodeKey(a.Node, a.Module)
		w.base[key], w.generated[key] = a, true
	}
	for k, v := range g.ConfigValues {
		w.config[rename(k)] = string(v)
	}
	for bucket, entries := range g.Bound {
		if w.bound[bucket] == nil {
			w.bound[bucket] = map[string]nodes.BoundEntry{}
		}
		for k, raw := range entries {
			var e nodes.BoundEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, err
			}
			w.bound[bucket][rename(k)] = e
		}
	}
	for k, v := range g.Secrets {
		w.secrets[rename(k)] = string(v)
	}
	for key, a := range w.base {
		w.base[key] = localOwners(a)
		w.assigned[key] = true
		for _, f := range a.Provisioning.Files {
			switch f.Form {
			case nodes.FormSeed:
				w.leftover[f.Path] = true
			case nodes.FormManagedKeys, nodes.FormManagedBlock:
				w.leftover[f.Path] = true
				w.standIns[f.Path] = "# stand-in of " + f.Path + " on this node\n"
			}
		}
	}
	w.boundNow = map[string]map[string][]byte{}
	for b, entries := range w.bound {
		w.boundNow[b] = map[string][]byte{}
		for k, e := range entries {
			w.boundNow[b][k], _ = json.Marshal(e)
		}
	}
	return w, nil
}

// localOwners takes out owners and groups this machine lacks when the run
// is root (mesh-fill then really chowns and refuses a name it cannot
// resolve), as the lab does.
func localOwners(a nodes.Assignment) nodes.Assignment {
	if os.Geteuid() != 0 {
		return a
	}
	known := func(name string, lookup func(string) error) string {
		if name == "" || lookup(name) != nil {
			return ""
		}
		return name
	}
	usr := func(n string) error { _, err := user.Lookup(n); return err }
	grp := func(n string) error { _, err := user.LookupGroup(n); return err }
	p := &a.Provisioning
	p.Files = slices.Clone(p.Files)
	for i := range p.Files {
		p.Files[i].Owner, p.Files[i].Group = known(p.Files[i].Owner, usr), known(p.Files[i].Group, grp)
	}
	p.Secrets = slices.Clone(p.Secrets)
	for i := range p.Secrets {
		p.Secrets[i].Owner, p.Secrets[i].Group = known(p.Secrets[i].Owner, usr), known(p.Secrets[i].Group, grp)
	}
	p.Provisions = slices.Clone(p.Provisions)
	for i := range p.Provisions {
		p.Provisions[i].Owner, p.Provisions[i].Group = known(p.Provisions[i].Owner, usr), known(p.Provisions[i].Group, grp)
	}
	return a
}

// variants is how many plan variants a generated module has.
const variants = 4

// planVariant is the plan of key in variant v: 0 as generated, 1 without
// its last file (mesh-fill removes it), 2 with its first file's mode
// 0640, 3 offering svc by what it has beside a helper's offer (its
// consumers' ${bound:svc:url} then come from `have`, SPEC §4.6).
func (w *world) planVariant(key string, v int) ([]byte, error) {
	a := w.base[key]
	p := a.Provisioning
	switch v {
	case 1:
		p.Files = p.Files[:len(p.Files)-1]
	case 2:
		p.Files = slices.Clone(p.Files)
		p.Files[0].Mode = "0640"
	case 3:
		p.Provides = []nodes.Offer{
			{Provision: scale.Provision, Have: map[string]string{scale.BoundKey: "https://have." + a.Module + ".mesh"}},
			{Provision: "helped", AnsweredBy: "helper"},
		}
	}
	a.Provisioning = p
	return json.Marshal(a)
}

// paths are every path key's plan (in its current variant) names, with the
// form each is written in ("owned" for a secret's or credential's file).
func planPaths(a nodes.Assignment) map[string]string {
	out := map[string]string{}
	for _, f := range a.Provisioning.Files {
		form := f.Form
		if form == "" {
			form = nodes.FormOwned
		}
		out[f.Path] = form
	}
	for _, s := range a.Provisioning.Secrets {
		if s.Path != "" {
			out[s.Path] = nodes.FormOwned
		}
	}
	for _, p := range a.Provisioning.Provisions {
		if p.Path != "" {
			out[p.Path] = nodes.FormOwned
		}
	}
	return out
}

// keysOf are the keys of m, sorted (the schedule draws from sorted lists,
// so a seed draws the same steps every time).
func keysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

package scale

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Renderer renders a node's files from the mesh's current values the way
// consul-template does on every change: every template of the node,
// every time. Templates are parsed once (as consul-template keeps them);
// each render looks every value up again. It reads Mesh.ConfigValues at
// render time, so a caller that changes a value there sees it rendered.
type Renderer struct {
	m     *Mesh
	n     int
	node  string
	bound map[string][]byte // module → its bound url
	cons  map[string][]byte // provider module → its consumers list
}

// Renderer prepares the full re-render of node n.
func (m *Mesh) Renderer(n int) *Renderer {
	r := &Renderer{m: m, n: n, node: NodeName(n), bound: map[string][]byte{}, cons: map[string][]byte{}}
	type entry struct {
		Consumer   string `json:"consumer"`
		Module     string `json:"module"`
		Local      string `json:"local"`
		Credential string `json:"credential"`
		Value      string `json:"value"`
	}
	byProvider := map[string][]nodes.Assignment{}
	for gi, a := range m.Assignments {
		byProvider[m.Provider(gi)] = append(byProvider[m.Provider(gi)], a)
	}
	for i := 0; i < m.Config.Modules; i++ {
		name := ModuleName(n, i)
		var e nodes.BoundEntry
		_ = json.Unmarshal(m.Bound[spec.BoundBucket(m.Provider(n*m.Config.Modules+i))][spec.BoundKey(r.node, name, Provision, "")], &e)
		r.bound[name] = []byte(e.Values[BoundKey])
		list := byProvider[name]
		sort.Slice(list, func(a, b int) bool {
			return spec.EncodeKey(list[a].Node, list[a].Module) < spec.EncodeKey(list[b].Node, list[b].Module)
		})
		out := make([]entry, 0, len(list))
		for _, a := range list {
			cred := spec.PairSecretName(name, Provision, a.Node, a.Module, "")
			out = append(out, entry{Consumer: a.Node, Module: a.Module, Credential: cred, Value: string(m.Secrets[cred])})
		}
		r.cons[name], _ = json.Marshal(out)
	}
	return r
}

// collections renders every collection of the node from the current item
// values: contributors in name order, each introduced by a comment line.
func (r *Renderer) collections() (map[string][]byte, error) {
	m := r.m
	out := map[string][]byte{}
	for i := 0; i < m.Config.Modules; i++ { // ModuleName sorts as i does
		name := ModuleName(r.n, i)
		item, err := m.groups[i/m.Config.Contributors].item.Render(func(p nodes.Placeholder) []byte {
			return m.ConfigValues[spec.EncodeKey(r.node, name, p.Name)]
		})
		if err != nil {
			return nil, err
		}
		c := m.Collection(i)
		text := append(out[c], Comment+" "+name+"\n"...)
		out[c] = append(text, item...)
	}
	return out, nil
}

// RenderAll renders every file of the node; it returns how many and
// their total size.
func (r *Renderer) RenderAll() (files, bytes int, err error) {
	colls, err := r.collections()
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < r.m.Config.Modules; i++ {
		for f := 0; f < r.m.Config.Files; f++ {
			b, err := r.render(colls, i, f)
			if err != nil {
				return files, bytes, err
			}
			files++
			bytes += len(b)
		}
	}
	return files, bytes, nil
}

// Render renders file f of module index i (its bytes as the fill socket
// should receive them).
func (r *Renderer) Render(i, f int) ([]byte, error) {
	colls, err := r.collections()
	if err != nil {
		return nil, err
	}
	return r.render(colls, i, f)
}

func (r *Renderer) render(colls map[string][]byte, i, f int) ([]byte, error) {
	m := r.m
	name := ModuleName(r.n, i)
	pl := m.Assignments[r.n*m.Config.Modules+i].Provisioning.Placement
	return m.groups[i/m.Config.Contributors].tmpls[f].Render(func(p nodes.Placeholder) []byte {
		switch p.Kind {
		case spec.Config:
			return m.ConfigValues[spec.EncodeKey(r.node, name, p.Name)]
		case spec.Secret:
			return m.Secrets[spec.OwnSecretName(name, p.Name)]
		case spec.Bound:
			return r.bound[name]
		case spec.Collected:
			return colls[p.Name]
		case spec.Consumers:
			return r.cons[name]
		}
		if spec.IsPlacementKind(p.Kind) {
			return []byte(pl[string(p.Kind)][p.Name])
		}
		panic(fmt.Sprintf("scale: kind %s not generated", p.Kind))
	})
}

package nodes

import (
	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A ${config:K} placeholder's need node is itself an input leaf: it holds
// mesh-config_resolved <node>.<module>.<K> when the registry answers for
// kind config and the key has a value, and otherwise waits for the first
// of the two that does not. (A config leaf and a need node reading it and
// the registry's entry, in a pair per placeholder, were 10 of a filled
// file's 11.7 graph nodes: ~1.2 KB a file at 10k files, issue 20.)
// Explain and DOT still show the config key (or the registry's entry) as
// the input at the root: Behind names it.
//
// A value is held once: by its need leaf while that leaf is ready, else in
// m.config (a key no placeholder reads, or one whose leaf waits for the
// registry). A leaf made takes its value out of m.config, a leaf removed
// or made to wait hands it back. The registry's answer for kind config is
// kept (configReg) and every config need set again when it moves.

// configNeedKey is the key of module's need node for ${config:key}.
func configNeedKey(module, key string) graph.Key {
	return needKey(module, Placeholder{Kind: spec.Config, Name: key})
}

// configNeed returns module's need leaf for ${config:key}, making it when
// new.
func (m *NodeGraph) configNeed(mod *module, key string) *graph.Node {
	k := configNeedKey(mod.name, key)
	return m.leaf(k.Kind, k.Name, mod, func(n *graph.Node) { // OriginOf builds its Origin
		m.setConfigNeed(n, spec.EncodeKey(m.node, mod.name, key))
	})
}

// isConfigNeed says whether n is a config placeholder's need leaf, and of
// which module and key.
func isConfigNeed(n *graph.Node) (mod, key string, ok bool) {
	owner, isMod := n.Meta.(*module)
	if n.Key().Kind != KindNeed || !n.IsInput() || !isMod {
		return "", "", false
	}
	ph := needPlaceholder(n, owner.name)
	return owner.name, ph.Name, ph.Kind == spec.Config
}

// setConfigNeed sets config need leaf n (bucket key bk) from what is
// known. A ready leaf the registry still answers for keeps its value.
func (m *NodeGraph) setConfigNeed(n *graph.Node, bk string) {
	if n.State() == graph.Ready {
		if m.configReg.ok {
			return
		}
		m.keepConfig(bk, n.Value().([]byte))
	}
	v, has := m.config[bk]
	switch {
	case !m.configReg.ok:
		m.g.SetWaiting(n, m.configReg.why)
	case has:
		delete(m.config, bk) // the leaf holds it now
		m.shrinkConfig()
		m.g.Set(n, v)
	default:
		m.g.SetWaiting(n, m.configWaits(bk))
	}
}

// configWaits is why a config value known to be missing waits.
func (m *NodeGraph) configWaits(bk string) string {
	if why := m.ConfigUnreadable(); why != "" {
		return why
	}
	return spec.ConfigBucket + " " + bk + ": not written yet" + m.nearMissWhy(spec.ConfigBucket, bk)
}

// ConfigUnreadable says why mesh-config_resolved cannot be read (the bus
// refuses it, or it does not exist yet), "" when it can: a value missing
// then may be written all the same (prov.ask says so, outputs/ask).
func (m *NodeGraph) ConfigUnreadable() string {
	switch {
	case m.notPermitted[spec.ConfigBucket]:
		return NotPermittedWhy(spec.ConfigBucket)
	case m.configMissing:
		return "bucket " + spec.ConfigBucket + " does not exist yet"
	}
	return ""
}

// keepConfig holds value v of bucket key bk in m.config.
func (m *NodeGraph) keepConfig(bk string, v []byte) {
	m.config[bk] = v
	m.configRoom = max(m.configRoom, len(m.config))
}

// shrinkConfig makes m.config again once most of what it held went to
// leaves: a Go map keeps the room it grew to, and a cold start puts every
// value before the plans make their leaves (3 MB of empty room at 10k files).
func (m *NodeGraph) shrinkConfig() {
	if m.configRoom < 64 || len(m.config) > m.configRoom/4 {
		return
	}
	c := make(map[string][]byte, len(m.config))
	for k, v := range m.config {
		c[k] = v
	}
	m.config, m.configRoom = c, len(c)
}

// configNeedOf is module's need leaf for ${config:key}, or nil.
func (m *NodeGraph) configNeedOf(module, key string) *graph.Node {
	return m.existing(KindNeed, configNeedKey(module, key).Name)
}

// putConfig records mesh-config_resolved <bk> = value; n is its need leaf
// (configNeedOf), or nil.
func (m *NodeGraph) putConfig(bk string, n *graph.Node, value []byte) {
	v := append([]byte(nil), value...)
	if n != nil && m.configReg.ok {
		m.g.Set(n, v)
		return
	}
	m.keepConfig(bk, v)
}

// deleteConfig records that mesh-config_resolved <bk> is gone.
func (m *NodeGraph) deleteConfig(bk, module, key string) {
	delete(m.config, bk)
	if n := m.configNeedOf(module, key); n != nil && m.configReg.ok {
		m.g.SetWaiting(n, m.configWaits(bk))
	}
}

// configValue is mesh-config_resolved <bk>'s value, if it has one; n is
// its need leaf (configNeedOf), or nil.
func (m *NodeGraph) configValue(bk string, n *graph.Node) ([]byte, bool) {
	if n != nil && n.State() == graph.Ready {
		v, _ := n.Value().([]byte)
		return v, true
	}
	v, ok := m.config[bk]
	return v, ok
}

// ConfigValue is this node's mesh-config_resolved value for module's key.
func (m *NodeGraph) ConfigValue(module, key string) ([]byte, bool) {
	return m.configValue(spec.EncodeKey(m.node, module, key), m.configNeedOf(module, key))
}

// configBucketMoved sets again every config need that waits: the bucket
// went missing or came back, or the bus refuses it or no longer does.
func (m *NodeGraph) configBucketMoved() {
	m.eachConfigNeed(func(n *graph.Node, bk string) {
		if n.State() != graph.Ready {
			m.setConfigNeed(n, bk)
		}
	})
}

// configBucketMissing records whether mesh-config_resolved does not exist.
func (m *NodeGraph) configBucketMissing(missing bool) {
	if m.configMissing == missing {
		return
	}
	m.configMissing = missing
	m.configBucketMoved()
}

// configRegistryMoved sets every config need again when the registry's
// answer for kind config moved.
func (m *NodeGraph) configRegistryMoved() {
	ok, why := m.registryAnswer(string(spec.Config))
	if ok == m.configReg.ok && why == m.configReg.why {
		return
	}
	m.configReg.ok, m.configReg.why = ok, why
	m.eachConfigNeed(m.setConfigNeed)
}

// eachConfigNeed calls fn for every config need leaf and its bucket key.
func (m *NodeGraph) eachConfigNeed(fn func(n *graph.Node, bk string)) {
	var ns []*graph.Node // fn may set leaves: not while ranging
	m.g.Range(func(n *graph.Node) {
		if _, _, ok := isConfigNeed(n); ok {
			ns = append(ns, n)
		}
	})
	for _, n := range ns {
		module, key, _ := isConfigNeed(n)
		fn(n, spec.EncodeKey(m.node, module, key))
	}
}

// configNeedGone hands the value removed config need n held back to
// m.config.
func (m *NodeGraph) configNeedGone(n *graph.Node, v any, ready bool) {
	if module, key, ok := isConfigNeed(n); ok && ready {
		m.keepConfig(spec.EncodeKey(m.node, module, key), v.([]byte))
	}
}

// folded is what DOT draws behind config need n: the registry's entry
// for kind config, which every config need reads (met, or as the need is
// while it does not answer), and, while it answers, the config key the
// need stands for, as the need is. Not a config need: nothing.
func (m *NodeGraph) folded(n *graph.Node) []graph.Folded {
	k, _, ok := m.Behind(n)
	if !ok {
		return nil
	}
	if k.Kind == KindRegistry {
		return []graph.Folded{{Key: k, State: n.State()}}
	}
	reg := graph.Key{Kind: KindRegistry, Name: string(spec.Config)}
	return []graph.Folded{{Key: reg, State: graph.Ready}, {Key: k, State: n.State()}}
}

// Behind is the input a config need leaf stands for, as explain and DOT
// show it: the registry's entry for kind config while the registry does
// not answer for it, else the config key. ok is false for any other node.
func (m *NodeGraph) Behind(n *graph.Node) (k graph.Key, o *Origin, ok bool) {
	module, key, ok := isConfigNeed(n)
	if !ok {
		return graph.Key{}, nil, false
	}
	if !m.configReg.ok {
		kind := string(spec.Config)
		return graph.Key{Kind: KindRegistry, Name: kind}, &Origin{Bucket: spec.RegistryBucket, Key: kind}, true
	}
	bk := spec.EncodeKey(m.node, module, key)
	return graph.Key{Kind: KindConfig, Name: bk}, &Origin{Module: module, Bucket: spec.ConfigBucket, Key: bk}, true
}

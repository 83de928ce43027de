package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/novox/mesh-provisioner/graph"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// This file is the mesh's one door for what the bus says: Put, Delete and
// BucketMissing take a bucket's key as the bus holds it, decode it once,
// record it, and say in a Change what the daemon has to act on.

// Change is what one Put or Delete did that the daemon acts on: a key to
// log as ignored, a refused plan to log, a config value to announce
// (prov.changed), a module to clean up after. The zero Change: nothing to do.
type Change struct {
	// OutOfShape: the key is not one its bucket may hold; nothing changed.
	OutOfShape error
	// Foreign: a key of another node in a bucket read for this node's keys
	// only; nothing changed.
	Foreign bool
	// Refused: the assignment's plan does not parse or breaks a rule; a
	// module of this node's fails with it.
	Refused error
	// OtherNode: the assignment is another node's (read for the consumers
	// and offers it binds, SPEC §2.2). Its refusal is its own node's to
	// say (§3, §5.3): every client of the mesh reads it, at each re-read.
	// With OutOfShape: the key's first token names another node
	// (otherNodesKey), so the key is that node's client's to warn of.
	OtherNode bool
	// NoPlan: the assignment carries no "provisioning": not the
	// provisioner's, nothing to fill or report (a debug log line).
	NoPlan bool
	// ConfigModule and ConfigKey: this node's module ConfigModule has a
	// config value (key ConfigKey) written anew, changed or deleted.
	ConfigModule, ConfigKey string
	// Added: this node's module Added is newly assigned to it.
	Added string
	// Removed: this node's module Removed was taken off it.
	Removed string
	// Assigned: this node's module Assigned had its assignment written,
	// new or again, changed or not (Added too): the vault, which judges an
	// ask by the assignments, may answer otherwise than it last did.
	Assigned string
	// Pairs: the consumers' credentials (pair/… vault names) this node
	// reads that the assignment written (any node's, new or again) binds:
	// the vault judges a consumer's credential by the consumer's plan
	// too, so a refusal of one may no longer stand.
	Pairs []string
}

// Put records bucket <key> = value: an assignment (any node's), a registry
// entry, one of this node's config values or a provider's binding (any
// other bucket).
func (m *NodeGraph) Put(bucket, key string, value []byte) Change {
	switch bucket {
	case spec.AssignmentsBucket:
		toks, err := spec.DecodeKey(key, 2)
		if err != nil {
			return Change{OutOfShape: err, OtherNode: m.otherNodesKey(key)}
		}
		had := toks[0] == m.node && m.mods[toks[1]] != nil
		err = m.putAssignment(key, toks[0], toks[1], value)
		if toks[0] == m.node {
			m.notingNoPlan(toks[1], errors.Is(err, ErrNoPlan))
		}
		if errors.Is(err, ErrNoPlan) {
			c := Change{NoPlan: true}
			if had {
				c.Removed = toks[1]
			}
			return c
		}
		c := Change{Refused: err, OtherNode: toks[0] != m.node, Pairs: m.pairsRead(key)}
		if toks[0] == m.node && m.mods[toks[1]] != nil {
			c.Assigned = toks[1]
			if !had {
				c.Added = toks[1]
			}
		}
		return c
	case spec.RegistryBucket:
		kind, err := spec.DecodeToken(key)
		if err != nil {
			return Change{OutOfShape: err}
		}
		m.putRegistry(kind, value)
	case spec.ConfigBucket:
		toks, err := spec.DecodeKey(key, 3)
		switch {
		case err != nil:
			m.nearMissPut(bucket, key, err)
			return Change{OutOfShape: err}
		case toks[0] != m.node:
			return Change{Foreign: true}
		}
		need := m.configNeedOf(toks[1], toks[2]) // one lookup for both
		old, had := m.configValue(key, need)
		m.putConfig(key, need, value)
		if m.mods[toks[1]] != nil && (!had || !bytes.Equal(old, value)) {
			return Change{ConfigModule: toks[1], ConfigKey: toks[2]}
		}
	default:
		toks, err := spec.DecodeKey(key, -1)
		if err == nil && (len(toks) < 3 || len(toks) > 4) {
			err = fmt.Errorf("key %q has %d tokens, want 3 or 4 (node.module.provision[.local])", key, len(toks))
		}
		if err != nil {
			m.nearMissPut(bucket, key, err)
			return Change{OutOfShape: err}
		}
		m.putBound(bucket, key, value)
	}
	return Change{}
}

// Delete records that bucket <key> is gone. Only an assignment's key out of
// shape is reported: a registry's, a config's or a binding's key out of
// shape was reported when it was put.
func (m *NodeGraph) Delete(bucket, key string) Change {
	switch bucket {
	case spec.AssignmentsBucket:
		toks, err := spec.DecodeKey(key, 2)
		if err != nil {
			return Change{OutOfShape: err, OtherNode: m.otherNodesKey(key)}
		}
		m.index(key, nil)
		m.forgetOffers(key, toks[1])
		m.forgetUnparsed(key)
		if toks[0] == m.node {
			m.notingNoPlan(toks[1], false)
		}
		if mod := m.mods[toks[1]]; toks[0] == m.node && mod != nil {
			m.removeModule(mod)
			return Change{Removed: toks[1]}
		}
	case spec.RegistryBucket:
		if kind, err := spec.DecodeToken(key); err == nil {
			m.deleteRegistry(kind)
		}
	case spec.ConfigBucket:
		toks, err := spec.DecodeKey(key, 3)
		if err != nil {
			m.nearMissDelete(bucket, key)
		}
		if err != nil || toks[0] != m.node {
			return Change{}
		}
		// A delete of a key holding no value (deleted already, a purge
		// after a delete, never written) moved nothing: no change said
		// (SPEC §5.4's prov.changed is for a value that moved).
		_, had := m.configValue(key, m.configNeedOf(toks[1], toks[2]))
		m.deleteConfig(key, toks[1], toks[2])
		if had && m.mods[toks[1]] != nil {
			return Change{ConfigModule: toks[1], ConfigKey: toks[2]}
		}
	default:
		m.deleteBound(bucket, key)
		m.nearMissDelete(bucket, key)
	}
	return Change{}
}

// BucketMissing records whether bucket does not exist (yet): the leaves
// that wait for its keys say so. The assignments bucket missing changes
// nothing (no assignment is no module).
func (m *NodeGraph) BucketMissing(bucket string, missing bool) {
	switch bucket {
	case spec.AssignmentsBucket:
	case spec.RegistryBucket:
		m.registryBucketMissing(missing)
	case spec.ConfigBucket:
		m.configBucketMissing(missing)
	default:
		m.boundBucketMissing(bucket, missing)
	}
}

// BucketNotPermitted records whether the bus refuses this client bucket (a
// permission violation, SPEC §4.6): the leaves that wait for its keys say
// so, not that they are not written yet.
func (m *NodeGraph) BucketNotPermitted(bucket string, refused bool) {
	if m.notPermitted[bucket] == refused {
		return
	}
	if refused {
		m.notPermitted[bucket] = true
	} else {
		delete(m.notPermitted, bucket)
	}
	switch bucket {
	case spec.ConfigBucket:
		m.configBucketMoved()
	case spec.RegistryBucket:
		defer m.configRegistryMoved()
	}
	m.g.Range(func(n *graph.Node) {
		o, _ := n.Meta.(*Origin)
		switch k := n.Key(); {
		case k.Kind == KindRegistry && bucket == spec.RegistryBucket:
			m.initRegistry(n, k.Name)
		case k.Kind == KindBound && o != nil && o.Bucket == bucket:
			m.initBound(n, bucket, o.Key)
		}
	})
}

// NotPermittedWhy is why a leaf of a bucket the bus refuses this client
// waits.
func NotPermittedWhy(bucket string) string { return "not permitted to read " + bucket }

// otherNodesKey says whether an assignments key out of shape names
// another node in its first token: that token decodes, and not to this
// node. A key whose node token is itself out of shape is no one's to tell.
func (m *NodeGraph) otherNodesKey(key string) bool {
	first, _, _ := strings.Cut(key, ".")
	node, err := spec.DecodeToken(first)
	return err == nil && node != m.node
}

package nodes

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// This file holds what the sources said: each setter records it and sets the
// input leaf that stands for it, when one exists. Put, Delete and
// BucketMissing (buckets.go) call the bucket ones; the daemon the others.

// putRegistry records the registry's entry for kind.
func (m *NodeGraph) putRegistry(kind string, entry []byte) {
	m.registry[kind] = append([]byte(nil), entry...)
	if n := m.existing(KindRegistry, kind); n != nil {
		m.initRegistry(n, kind)
	}
	m.configRegistryMoved()
}

// deleteRegistry records that the registry no longer names kind.
func (m *NodeGraph) deleteRegistry(kind string) {
	delete(m.registry, kind)
	if n := m.existing(KindRegistry, kind); n != nil {
		m.initRegistry(n, kind)
	}
	m.configRegistryMoved()
}

// registryBucketMissing records whether the registry bucket does not exist.
func (m *NodeGraph) registryBucketMissing(missing bool) {
	if m.registryMissing == missing {
		return
	}
	m.registryMissing = missing
	m.g.Range(func(n *graph.Node) {
		if n.Key().Kind == KindRegistry {
			m.initRegistry(n, n.Key().Name)
		}
	})
	m.configRegistryMoved()
}

func (m *NodeGraph) registryLeaf(kind string) *graph.Node {
	return m.leaf(KindRegistry, kind, &Origin{Bucket: spec.RegistryBucket, Key: kind}, func(n *graph.Node) {
		m.initRegistry(n, kind)
	})
}

func (m *NodeGraph) initRegistry(n *graph.Node, kind string) {
	if ok, why := m.registryAnswer(kind); ok {
		m.g.Set(n, string(m.registry[kind]))
	} else {
		m.g.SetWaiting(n, why)
	}
}

// registryAnswer says whether the registry answers for kind (names it, as
// this client reads it), and if not why.
func (m *NodeGraph) registryAnswer(kind string) (bool, string) {
	switch e, ok := m.registry[kind]; {
	case ok:
		if why := registryMismatch(kind, e); why != "" {
			return false, why
		}
		return true, ""
	case m.notPermitted[spec.RegistryBucket]:
		return false, NotPermittedWhy(spec.RegistryBucket)
	case m.registryMissing:
		return false, "bucket " + spec.RegistryBucket + " does not exist yet"
	default:
		return false, "the registry (" + spec.RegistryBucket + ") does not name kind " + kind
	}
}

// putBound records <bucket> <key> (a provider's binding for this node).
func (m *NodeGraph) putBound(bucket, key string, value []byte) {
	if m.bound[bucket] == nil {
		m.bound[bucket] = map[string][]byte{}
	}
	m.bound[bucket][key] = append([]byte(nil), value...)
	if n := m.existing(KindBound, bucket+" "+key); n != nil {
		m.initBound(n, bucket, key)
	}
}

// deleteBound records that <bucket> <key> is gone.
func (m *NodeGraph) deleteBound(bucket, key string) {
	delete(m.bound[bucket], key)
	if n := m.existing(KindBound, bucket+" "+key); n != nil {
		m.initBound(n, bucket, key)
	}
}

// boundBucketMissing records whether a provider's bucket does not exist.
func (m *NodeGraph) boundBucketMissing(bucket string, missing bool) {
	if m.boundMissing[bucket] == missing {
		return
	}
	m.boundMissing[bucket] = missing
	m.g.Range(func(n *graph.Node) {
		if o, ok := n.Meta.(*Origin); ok && n.Key().Kind == KindBound && o.Bucket == bucket {
			m.initBound(n, bucket, o.Key)
		}
	})
}

func (m *NodeGraph) boundLeaf(module, bucket, key string) *graph.Node {
	return m.leaf(KindBound, bucket+" "+key, &Origin{Module: module, Bucket: bucket, Key: key}, func(n *graph.Node) {
		if m.boundUse[bucket] == nil {
			m.boundUse[bucket] = map[*graph.Node]bool{}
		}
		m.boundUse[bucket][n] = true
		m.initBound(n, bucket, key)
	})
}

// boundGone is called when a bound leaf leaves the graph.
func (m *NodeGraph) boundGone(n *graph.Node) {
	o, ok := n.Meta.(*Origin)
	if !ok {
		return
	}
	if delete(m.boundUse[o.Bucket], n); len(m.boundUse[o.Bucket]) == 0 {
		delete(m.boundUse, o.Bucket)
	}
}

// ForgetBound drops what a provider's bucket said. The daemon calls it when
// it stops watching the bucket (no plan reads it any more), so that a later
// watch starts from its own snapshot rather than from stale entries.
func (m *NodeGraph) ForgetBound(bucket string) {
	delete(m.bound, bucket)
	delete(m.boundMissing, bucket)
	delete(m.notPermitted, bucket)
	delete(m.boundRead, bucket) // a later watch is read anew (boundread.go)
	delete(m.nearMiss, bucket)
}

func (m *NodeGraph) initBound(n *graph.Node, bucket, key string) {
	raw, ok := m.bound[bucket][key]
	switch {
	case !ok && m.notPermitted[bucket]:
		m.g.SetWaiting(n, NotPermittedWhy(bucket)) // SPEC §4.6's words; explain names the key
	case !ok && m.boundMissing[bucket]:
		m.g.SetWaiting(n, "bucket "+bucket+" does not exist yet (waiting for its key "+key+")")
	case !ok && !m.boundRead[bucket]:
		m.g.SetWaiting(n, unreadWhy(bucket, key)) // not "not written yet": nobody knows yet (boundread.go)
	case !ok:
		m.g.SetWaiting(n, bucket+" "+key+": not written yet"+m.nearMissWhy(bucket, key))
	default:
		e, err := parseBoundEntry(raw) // a value that is null is one the entry lacks
		if err != nil {
			m.g.SetFailed(n, bucket+" "+key+": not a bound entry: "+err.Error())
			return
		}
		switch e.State {
		case "bound":
			if e.Values == nil {
				e.Values = map[string]string{}
			}
			m.g.Set(n, e.Values)
		case "refused":
			reason := e.Reason
			if reason == "" {
				reason = "(it gave no reason)"
			}
			m.g.SetFailed(n, bucket+" "+key+": refused by the provider: "+reason)
		case "":
			m.g.SetWaiting(n, bucket+" "+key+": the entry has no state, not bound yet")
		default:
			m.g.SetWaiting(n, bucket+" "+key+": state "+strconv.Quote(e.State)+", not bound yet")
		}
	}
}

// BoundBuckets lists the providers' buckets this node's plans read.
func (m *NodeGraph) BoundBuckets() []string {
	out := make([]string, 0, len(m.boundUse))
	for b := range m.boundUse {
		out = append(out, b)
	}
	sortStrings(out)
	return out
}

// SetSecret records a secret's value (memory only), the vault's answer to
// an ask made at asked.
func (m *NodeGraph) SetSecret(name string, value []byte, asked time.Time) {
	m.setSecret(name, secretSource{state: graph.Ready, value: append([]byte(nil), value...), asked: asked, answered: true})
}

// SecretAsked is when the ask that brought the value held for the vault
// name was made (zero when none is held): explain says it of a secret's
// file (SPEC §5.5).
func (m *NodeGraph) SecretAsked(name string) time.Time {
	if s, ok := m.secrets[name]; ok && s.state == graph.Ready {
		return s.asked
	}
	return time.Time{}
}

// SecretLastAsked is when the vault was last asked for name, whatever it
// answered (zero when no answer is known): explain says it of a vault name
// that waits or failed. The time is kept out of the reason, so an answer
// that says again what the last said moves no need (SPEC §5.2: a need is
// written when its state changes, and the sweep's "stood asked" reads the
// time of its last change).
func (m *NodeGraph) SecretLastAsked(name string) time.Time {
	return m.secrets[name].asked
}

// SecretWaiting records that a secret is not there yet, saying why, the
// answer to an ask made at asked.
func (m *NodeGraph) SecretWaiting(name, why string, asked time.Time) {
	m.setSecret(name, secretSource{state: graph.Waiting, why: why, asked: asked})
}

// SecretAbsent records that the vault said it does not hold a secret yet,
// saying why, the answer to an ask made at asked.
func (m *NodeGraph) SecretAbsent(name, why string, asked time.Time) {
	m.setSecret(name, secretSource{state: graph.Waiting, why: why, asked: asked, answered: true})
}

// SecretFailed records that the vault refused a secret, saying why, the
// answer to an ask made at asked.
func (m *NodeGraph) SecretFailed(name, reason string, asked time.Time) {
	m.setSecret(name, secretSource{state: graph.Failed, why: reason, asked: asked, answered: true})
}

// VaultAnswered says whether what is known of the vault name is the
// vault's own answer (its value, its absence, its refusal) rather than an
// ask that got none: an ask again that gets none (the bus came back
// before the vault did) leaves it as it is.
func (m *NodeGraph) VaultAnswered(name string) bool {
	return m.secrets[name].answered
}

func (m *NodeGraph) setSecret(name string, s secretSource) {
	m.flushConsumers() // the credential of a consumer bound since is wanted
	if s.answered {
		m.consumerAnswered(name)
	}
	n := m.existing(KindVault, name)
	if n == nil {
		return // no longer wanted: keep nothing of it
	}
	old := m.secrets[name]
	if old.state == graph.Ready && len(old.value) > 0 && !bytes.Equal(old.value, s.value) {
		s.before = old.value
	} else {
		s.before = old.before // a refusal or a silence since: what files may hold still
	}
	if s.first = old.first; s.first == nil && s.state == graph.Ready {
		s.first = s.value
	}
	m.secrets[name] = s
	clear(m.quoted) // what QuotesSecret said may no longer hold
	m.set(n, s.state, s.value, s.why)
}

// HoldsSecret says whether the vault name's value is held (the vault
// handed it and nothing since said otherwise).
func (m *NodeGraph) HoldsSecret(name string) bool {
	s, ok := m.secrets[name]
	return ok && s.state == graph.Ready
}

// WantsSecret says whether some file still needs the vault name.
func (m *NodeGraph) WantsSecret(name string) bool {
	m.flushConsumers() // a consumer bound since wants its credential
	return m.existing(KindVault, name) != nil
}

// CredentialOf is the credential form a request for the vault name carries
// (SPEC §4.2 r2): a provisions entry's credential for a provision/ name of
// one of this node's modules, "" for every other name.
func (m *NodeGraph) CredentialOf(name string) string {
	v, err := spec.ParseVaultName(name)
	if err != nil || v.Class != spec.VaultProvision || v.Node != m.node {
		return ""
	}
	mod := m.mods[v.Module]
	if mod == nil || mod.asg == nil {
		return ""
	}
	pr, ok := mod.asg.Provisioning.ProvisionFor(v.Provision, v.Local)
	if !ok || pr.Provider != v.Provider {
		return ""
	}
	return pr.Credential
}

// formsMoved queues to be asked again each provisions entry's vault name
// whose credential form a module's new plan changed: the vault acts on the
// form (SPEC §4.2 r2), while the name, and so its leaf and the value held,
// stay.
func (m *NodeGraph) formsMoved(module string, old, now *Assignment) {
	if old == nil || now == nil {
		return
	}
	was := map[string]string{}
	for _, pr := range old.Provisioning.Provisions {
		was[spec.ProvisionSecretName(pr.Provider, pr.Provision, m.node, module, pr.Local)] = pr.Credential
	}
	for _, pr := range now.Provisioning.Provisions {
		name := spec.ProvisionSecretName(pr.Provider, pr.Provision, m.node, module, pr.Local)
		if form, ok := was[name]; ok && form != pr.Credential {
			m.newSecrets = append(m.newSecrets, name)
		}
	}
}

// TakeNewSecrets returns the vault names wanted since the last call, and
// those whose credential form moved (formsMoved).
func (m *NodeGraph) TakeNewSecrets() []string {
	m.flushConsumers() // the credentials of consumers bound since are asked now
	out := m.newSecrets
	m.newSecrets = nil
	return out
}

func (m *NodeGraph) vaultLeaf(name string) *graph.Node {
	return m.leaf(KindVault, name, &Origin{Vault: name}, func(n *graph.Node) {
		m.g.MarkSecret(n)
		s, ok := m.secrets[name]
		switch {
		case ok && s.state == graph.Ready:
			m.g.Set(n, s.value) // held from earlier in this run: not asked again
			return
		case ok && s.state == graph.Failed:
			// Refused earlier in this run (the module's files made anew):
			// the vault's word stands until its next ask, which the Asker
			// has set (Ask asks no more while one is).
			m.g.SetFailed(n, s.why)
		case ok:
			m.g.SetWaiting(n, s.why)
		default:
			m.g.SetWaiting(n, "vault "+name+": not asked yet")
		}
		m.newSecrets = append(m.newSecrets, name)
	})
}

// ForgetSecret drops a secret held for a module that no file reads at the
// moment (the vault said it changed: the next leaf for it asks again).
func (m *NodeGraph) ForgetSecret(name string) {
	if m.existing(KindVault, name) == nil {
		delete(m.secrets, name)
		clear(m.quoted)
	}
}

// ForgetUnreadSecrets drops every secret held for a module that no file
// reads at the moment (between two templates archives): the bus came back,
// and a secret-changed for it may have been lost while it was away (SPEC
// §4.2 r2), so the next leaf for it asks again.
func (m *NodeGraph) ForgetUnreadSecrets() {
	for name := range m.secrets {
		m.ForgetSecret(name)
	}
}

// heldFor is the module of this node a module's own secret or provisioned
// credential belongs to, and the provider a consumer's pair/ credential is
// held for while its binding stands (pairHeldFor); "" for any other.
func (m *NodeGraph) heldFor(name string) string {
	v, err := spec.ParseVaultName(name)
	switch {
	case err != nil:
	case v.Class == spec.VaultOwn:
		return v.Module
	case v.Class == spec.VaultProvision && v.Node == m.node:
		return v.Module
	case v.Class == spec.VaultPair:
		return m.pairHeldFor(v)
	}
	return ""
}

// SetArchive records a module's templates archive (members by name) for
// digest, and builds the module's files from it.
func (m *NodeGraph) SetArchive(module, digest string, members map[string][]byte) {
	m.setArchive(module, archiveSource{digest: digest, state: graph.Ready, members: members})
}

// ArchiveFailed records that a module's archive cannot be used, the
// outcome of a fetch tried at tried.
func (m *NodeGraph) ArchiveFailed(module, digest, reason string, tried time.Time) {
	m.setArchive(module, archiveSource{digest: digest, state: graph.Failed, why: reason, tried: tried})
}

// ArchiveWaiting records that a module's archive is not there yet, the
// outcome of a fetch tried at tried.
func (m *NodeGraph) ArchiveWaiting(module, digest, why string, tried time.Time) {
	m.setArchive(module, archiveSource{digest: digest, state: graph.Waiting, why: why, tried: tried})
}

// ArchiveTried is when the fetch of module's current templates archive
// was last tried without getting it (zero: no try has failed yet, or it
// was got): explain says it, as it says when a vault name was last asked.
func (m *NodeGraph) ArchiveTried(module string) time.Time {
	mod, a := m.mods[module], m.archives[module]
	if mod == nil || mod.asg == nil || a.state == graph.Ready || a.digest != mod.asg.Provisioning.Templates.Digest {
		return time.Time{}
	}
	return a.tried
}

// shareArchive gives module the archive of digest another module holds
// ready, if one does (its members are only read); it says whether one did.
// The module it was last set ready for is looked at first; when that one
// moved on (or is module itself, its plan moved back), every other is:
// a module given D after the one that fetched it moved to E, or a plan
// moved from D to E and back while another kept D, was sent to the
// fetcher, which read D back from memory in milliseconds, and was
// reported waiting ("not fetched yet") and applied within the second (an
// outside audit). The look at every module runs only when the one
// remembered moved on, and forgets it: a roll-out of a new digest to many
// modules looks at none.
func (m *NodeGraph) shareArchive(module, digest string) bool {
	holds := func(other string) (archiveSource, bool) {
		a, ok := m.archives[other]
		return a, ok && other != module && a.state == graph.Ready && a.digest == digest
	}
	last, known := m.readyArchive[digest]
	if !known {
		return false // none was set ready with it, or none held it when last looked for
	}
	a, ok := holds(last)
	if !ok {
		delete(m.readyArchive, digest) // it moved on since
		for other := range m.archives {
			if a, ok = holds(other); ok {
				m.readyArchive[digest] = other
				break
			}
		}
		if !ok {
			return false
		}
	}
	m.archives[module] = archiveSource{digest: digest, state: graph.Ready, members: a.members, tried: a.tried}
	return true
}

func (m *NodeGraph) setArchive(module string, a archiveSource) {
	mod := m.mods[module]
	if mod == nil || mod.asg == nil || mod.asg.Provisioning.Templates.Digest != a.digest {
		return // stale: the plan moved on
	}
	m.archives[module] = a
	if a.state == graph.Ready {
		if m.readyArchive == nil {
			m.readyArchive = map[string]string{}
		}
		m.readyArchive[a.digest] = module
	}
	m.rebuild(mod)
}

// TakeNewArchives returns the archives wanted since the last call.
func (m *NodeGraph) TakeNewArchives() []ArchiveWant {
	out := m.newArchives
	m.newArchives = nil
	return out
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// registryMismatch says why a registry entry cannot be followed: it does
// not parse, it is another kind's, or it names a bucket, verb, key or
// field other than the one this client reads the kind from (where a kind
// lives is all of them). An entry that leaves a field out is not judged
// on it.
func registryMismatch(kind string, entry []byte) string {
	var e struct {
		Kind   string `json:"kind"`
		Bucket string `json:"bucket"`
		Verb   string `json:"verb"`
		Key    string `json:"key"`
		Field  string `json:"field"`
	}
	if t := bytes.TrimSpace(entry); len(t) == 0 || t[0] != '{' {
		return "the registry's entry for kind " + kind + " is not a JSON object"
	}
	if err := json.Unmarshal(entry, &e); err != nil {
		return "the registry's entry for kind " + kind + " does not parse: " + err.Error()
	}
	if e.Kind != "" && e.Kind != kind { // another kind's entry put at this kind's key
		return "the registry's entry for kind " + kind + " is kind " + e.Kind + "'s"
	}
	// Where this client reads each kind is its row of the table (SPEC §6.1).
	want, ok := spec.Lookup(spec.Kind(kind))
	if !ok {
		return ""
	}
	if e.Bucket != "" && want.Bucket != "" && e.Bucket != want.Bucket {
		return "the registry says kind " + kind + " lives in bucket " + e.Bucket + "; this client reads it from " + want.Bucket
	}
	if e.Verb != "" && want.Verb != "" && e.Verb != want.Verb {
		return "the registry says kind " + kind + " is asked on " + e.Verb + "; this client asks " + want.Verb
	}
	if e.Key != "" && want.Key != "" && e.Key != want.Key {
		return "the registry says kind " + kind + " is at key " + e.Key + "; this client reads it at " + want.Key
	}
	if e.Field != "" && want.Field != "" && e.Field != want.Field {
		return "the registry says kind " + kind + " is field " + e.Field + "; this client reads it from " + want.Field
	}
	return ""
}

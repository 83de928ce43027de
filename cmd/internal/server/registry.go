package server

import (
	"sort"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Entry is one registry entry (SPEC §6.1): which domain answers a kind and
// where a client finds its values. The fields are declared in the order the
// JSON holds them (kind, owner, verb, bucket, key, field); empty ones are
// left out.
type Entry struct {
	Kind   string `json:"kind,omitempty"`
	Owner  string `json:"owner,omitempty"`
	Verb   string `json:"verb,omitempty"`
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
	Field  string `json:"field,omitempty"`
}

// The owners and buckets the registry names.
const (
	assignmentsBucket = "mesh-controller_assignments"
	assignmentKey     = "<node>.<module>"
	vaultVerb         = "mesh-vault.get"
)

// collectionKinds are the kinds answered by a collection, like collected:
// ${shell:zsh:normal} is the collection shell:zsh:normal.
var collectionKinds = []string{"collected", "shell", "environment", "contribution"}

// placementKinds are the kinds answered by the module's own plan, at
// provisioning.placement.<kind>.
var placementKinds = []string{"dir", "port", "access", "seat", "machine"}

// table builds the registry: the one place where kinds are bound to domains.
func table() []Entry {
	t := []Entry{
		{Kind: "config", Owner: "mesh-config", Bucket: "mesh-config_resolved", Key: "<node>.<module>.<key>"},
		{Kind: "secret", Owner: "mesh-vault", Verb: vaultVerb},
		{Kind: "consumers", Owner: "mesh-vault", Verb: vaultVerb, Bucket: assignmentsBucket, Key: assignmentKey},
		{Kind: "bound", Owner: "<provider>", Bucket: "<provider>_bound", Key: "<node>.<module>.<provision>[.<local>]"},
	}
	for _, k := range collectionKinds {
		t = append(t, Entry{Kind: k, Owner: "mesh-provisioner", Bucket: spec.CollectBucket, Key: "<node>.<collection>.<contributor>"})
	}
	for _, k := range placementKinds {
		t = append(t, Entry{Kind: k, Owner: "mesh-controller", Bucket: assignmentsBucket, Key: assignmentKey,
			Field: "provisioning.placement." + k})
	}
	return t
}

// Registry returns the registry compiled in the server, sorted by kind.
func Registry() []Entry {
	t := table()
	sort.Slice(t, func(i, j int) bool { return t[i].Kind < t[j].Kind })
	return t
}

// EntryJSON is the entry as the registry bucket holds it: compact JSON with
// '<' and '>' written as themselves (not \u003c), no trailing newline.
func EntryJSON(e Entry) []byte { return plainJSON(e) }

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

// table builds the registry from the table of kinds (package spec), which
// binds each kind to its domain.
func table() []Entry {
	rows := spec.Kinds()
	t := make([]Entry, len(rows))
	for i, r := range rows {
		t[i] = Entry{Kind: string(r.Kind), Owner: r.Owner, Verb: r.Verb, Bucket: r.Bucket, Key: r.Key, Field: r.Field}
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

package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Fuzz targets for what other parts of the mesh write and this client
// reads: a provider's bound entry (SPEC §4.6), a provider's offers and
// another node's plan as it binds consumers (§3, §4.5), the registry's
// entries (§6.1), and any key and value of the buckets a client watches
// (NodeGraph.Put: config values are taken verbatim, §2.2). Each never
// panics, says what is wrong with a value it refuses, and drops nothing
// it accepts quietly.

// The SPEC's bound entries (§4.6), and values a provider's program may
// write beside them.
var boundSeeds = []string{
	`{"state": "bound",   "values": {"as": "claude-code-ace", "user": "…", "url": "…"}}`,
	`{"state": "refused", "reason": "gitea does not serve gitea-admin"}`,
	`{"state": "bound", "values": {"port": 5432, "tls": true, "x": null, "f": 5.0}}`,
	`{"state": "bound", "values": {"a": {"b": 1}}}`,
	`{"state": "bound", "values": {"a": [1]}}`,
	`{"state": "bound", "values": {"a": "x", "a": null}}`,
	`{"state": "bound", "values": {"a": null, "a": "x"}}`,
	`{"state": 7}`, `{"values": []}`, `null`, `[]`, `"bound"`, ``, `{`, `{"state":"bound","VALUES":{"k":"v"}}`,
}

func FuzzParseBoundEntry(f *testing.F) {
	for _, s := range boundSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := parseBoundEntry(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q refused with an empty error", raw)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted %q, which is not JSON", raw)
		}
		// Every value the entry holds is there, as its text: none dropped
		// quietly but a null (a value the entry lacks).
		var loose struct {
			Values map[string]json.RawMessage `json:"values"`
		}
		if json.Unmarshal(raw, &loose) == nil {
			for k, v := range loose.Values {
				got, ok := e.Values[k]
				switch {
				case string(v) == "null":
					if ok {
						t.Fatalf("%q: values.%s is null, yet held as %q", raw, k, got)
					}
				case !ok:
					t.Fatalf("%q: values.%s (%s) dropped", raw, k, v)
				case v[0] == '"':
					var s string
					if json.Unmarshal(v, &s) != nil || s != got {
						t.Fatalf("%q: values.%s is %s, held as %q", raw, k, v, got)
					}
				case got != string(v):
					t.Fatalf("%q: values.%s is %s, held as %q", raw, k, v, got)
				}
			}
		}
		// What was read, written again, reads the same.
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseBoundEntry(b)
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("%q read as %+v; written again %s reads %+v, %v", raw, e, b, again, err)
		}
	})
}

// The SPEC's provides entries (§3 r2) as an assignment carries them.
var offerSeeds = []string{
	`{"provisioning": {"provides": []}}`,
	`{"provisioning": {"provides": ["gitea-read"]}}`,
	`{"provisioning": {"provides": [{"provision": "forge-account", "answered_by": "helper"}]}}`,
	`{"provisioning": {"provides": [{"provision": "gitea-read", "have": {"url": "https://forge.mesh.internal"}}]}}`,
	`{"provisioning": {"provides": [{"provision": "x", "answered-by": "helper"}, {"provision": "y", "have": {"k": null}}]}}`,
	`{"provisioning": {"provides": [{"provision": "x", "answered_by": "someone"}]}}`,
	`{"provisioning": {"provides": ["x", "x"]}}`,
	`{"provisioning": {"provides": [7]}}`,
	`{"provisioning": {"provides": [{"provision": "x", "have": {"a:b": "1"}}]}}`,
	`{"provisioning": {"provides": [" \"x\""]}}`,
}

func FuzzParseOffers(f *testing.F) {
	for _, s := range offerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		offers, err := parseOffers(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q refused with an empty error", data)
			}
			return
		}
		if msg := checkProvides(offers); msg != "" {
			t.Fatalf("%q accepted, yet its offers break a rule: %s", data, msg)
		}
		// Written again as a plan carries them, the offers read the same
		// (a have without keys is no have).
		b, err := json.Marshal(map[string]any{"provisioning": map[string]any{"provides": offers}})
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseOffers(b)
		if err != nil {
			t.Fatalf("%q read as %+v; written again %s is refused: %v", data, offers, b, err)
		}
		if len(again) != len(offers) {
			t.Fatalf("%q: %d offers, written again %d", data, len(offers), len(again))
		}
		for i := range offers {
			o, a := offers[i], again[i]
			if o.Provision != a.Provision || o.AnsweredBy != a.AnsweredBy || !maps.Equal(o.Have, a.Have) {
				t.Fatalf("%q: offer %d read as %+v; written again %s reads %+v", data, i, o, b, a)
			}
			if Judge(offers, o.Provision).Rule != Judge(again, a.Provision).Rule {
				t.Fatalf("%q: offer %s judged otherwise once written again", data, o.Provision)
			}
		}
	})
}

// Another node's plan binds its consumers (parseBindings) as its own node
// reads it: a plan its own node takes binds the same provisions and
// offers wherever it is read, and each binding's vault name splits back
// into its parts (SPEC §4.2).
func FuzzParseBindings(f *testing.F) {
	f.Add("ace", "claude-code", []byte(specExample))
	f.Add("g14", "web", []byte(`{"provisioning":{"provisions":[{"provision":"gitea-read","provider":"gitea","credential":"token","local":"second"}]}}`))
	f.Add("g14", "web", []byte(`{"provisioning":{"provisions":[{"provision":"a/b","provider":"gitea","credential":"token"}]}}`))
	f.Add("g14", "web", []byte(`{"provisioning":{"provisions":[{"provision":"x","provider":"gitea","credential":"token","local":".."}]}}`))
	f.Add("g14", "web", []byte(`{"provisioning":{"provides":["x"],"Provides":["y"]}}`))
	f.Add("g14", "web", []byte(`{"provisioning":null}`))
	f.Add("g/14", "web", []byte(`{"provisioning":{}}`))
	f.Add("g14", "web", []byte(`[1]`))
	f.Fuzz(func(t *testing.T, node, module string, data []byte) {
		a, err := parseBindings(node, module, data)
		switch {
		case errors.Is(err, ErrNoPlan):
		case err != nil:
			if !strings.Contains(err.Error(), fmt.Sprintf("module %q", module)) {
				t.Fatalf("%q: error %q does not name module %q", data, err, module)
			}
		default:
			for i, p := range a.Provisioning.Provisions {
				name := spec.PairSecretName(p.Provider, p.Provision, node, module, p.Local)
				v, perr := spec.ParseVaultName(name)
				if perr != nil || v.Provider != p.Provider || v.Provision != p.Provision || v.Node != node || v.Module != module || v.Local != p.Local {
					t.Fatalf("%q: provisions[%d] bound as %q, which reads back as %+v, %v", data, i, name, v, perr)
				}
			}
		}
		own, oerr := ParseAssignment(spec.EncodeKey(node, module), data)
		if oerr != nil {
			return
		}
		if err != nil {
			t.Fatalf("%q: its own node takes the plan, another refuses its bindings: %v", data, err)
		}
		if !slices.EqualFunc(own.Provisioning.Provisions, a.Provisioning.Provisions, func(x, y ProvisionSpec) bool {
			return x.Provider == y.Provider && x.Provision == y.Provision && x.Local == y.Local && x.Credential == y.Credential
		}) {
			t.Fatalf("%q: its own node binds %+v, another %+v", data, own.Provisioning.Provisions, a.Provisioning.Provisions)
		}
		if !slices.EqualFunc(own.Provisioning.Provides, a.Provisioning.Provides, func(x, y Offer) bool {
			return x.Provision == y.Provision && x.AnsweredBy == y.AnsweredBy && maps.Equal(x.Have, y.Have)
		}) {
			t.Fatalf("%q: its own node offers %+v, another reads %+v", data, own.Provisioning.Provides, a.Provisioning.Provides)
		}
		offers, err := parseOffers(data) // how a consumer's node judges its bindings to this provider
		if err != nil || !slices.EqualFunc(own.Provisioning.Provides, offers, func(x, y Offer) bool {
			return x.Provision == y.Provision && x.AnsweredBy == y.AnsweredBy && maps.Equal(x.Have, y.Have)
		}) {
			t.Fatalf("%q: its own node offers %+v, a consumer's node reads %+v, %v", data, own.Provisioning.Provides, offers, err)
		}
	})
}

// A registry entry is followed, or refused saying why and naming its kind;
// the server's own entries (the table of kinds) are always followed.
func FuzzRegistryMismatch(f *testing.F) {
	for _, r := range spec.Kinds() {
		b, _ := json.Marshal(map[string]string{"kind": string(r.Kind), "owner": r.Owner, "verb": r.Verb, "bucket": r.Bucket, "key": r.Key, "field": r.Field})
		f.Add(string(r.Kind), b)
	}
	f.Add("config", []byte(`{"kind":"config","bucket":"elsewhere"}`))
	f.Add("secret", []byte(`{"verb":"other.get"}`))
	f.Add("config", []byte(`"config"`))
	f.Add("config", []byte(`{"bucket": 7}`))
	f.Add("dir", []byte(``))
	f.Fuzz(func(t *testing.T, kind string, entry []byte) {
		why := registryMismatch(kind, entry)
		if why != "" && !strings.Contains(why, "kind "+kind) {
			t.Fatalf("%q for kind %q: %q does not name the kind", entry, kind, why)
		}
		if why == "" && !bytes.HasPrefix(bytes.TrimSpace(entry), []byte("{")) {
			t.Fatalf("%q for kind %q followed, though not a JSON object", entry, kind)
		}
		row, ok := spec.Lookup(spec.Kind(kind))
		if !ok {
			return
		}
		own, _ := json.Marshal(map[string]string{"kind": kind, "owner": row.Owner, "verb": row.Verb, "bucket": row.Bucket, "key": row.Key, "field": row.Field})
		if why := registryMismatch(kind, own); why != "" {
			t.Fatalf("the server's own entry %s for kind %q is not followed: %s", own, kind, why)
		}
	})
}

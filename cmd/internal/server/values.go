package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The values of the needs, applied and collect buckets (SPEC §5.2, §5.3,
// §4.4) as the server checks them against their keys. One check per
// bucket, shared by the verb (a value out of shape is said in
// out_of_shape, not as an entry) and the sweep (a finding "out of shape",
// never judged as a need, report or item).
//
// A value is in shape when it is a JSON object whose fields have the
// SPEC's types, whose state (need, report) is one the SPEC names, and
// whose fields that repeat a key's token equal that token as decoded
// (§2.1): a need's node, module, kind and name; a report's node and
// module; an item's collection and contributor. A value that leaves one
// out (or null) is read as saying the key's: the key is what the server
// goes by, and a writer that only repeats it less is not out of shape. An
// item without its item is (it is all an item says). The other
// fields (a need's why; a report's at, files, waiting, reason) are
// checked for their type when present and may be absent; fields the SPEC
// does not name are let be (field names match as encoding/json matches
// them, case folded). These buckets hold no secret, so a why may quote a
// value's field (cut to maxQuoted bytes).

// needValue is a need's value (SPEC §5.2).
type needValue struct {
	Node   *string `json:"node"`
	Module *string `json:"module"`
	Kind   *string `json:"kind"`
	Name   *string `json:"name"`
	State  string  `json:"state"`
	Why    string  `json:"why"`
}

// reportValue is a report's value (SPEC §5.3).
type reportValue struct {
	Node   *string `json:"node"`
	Module *string `json:"module"`
	State  string  `json:"state"`
	At     string  `json:"at"`
	Files  []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
		Digest string `json:"digest"`
	} `json:"files"`
	Waiting []struct {
		Kind string `json:"kind"`
		Name string `json:"name"`
		Why  string `json:"why"`
	} `json:"waiting"`
	Reason string `json:"reason"`
}

// itemValue is an item's value (SPEC §4.4).
type itemValue struct {
	Collection  *string `json:"collection"`
	Contributor *string `json:"contributor"`
	Item        *string `json:"item"`
}

// checkNeed reads the value of the need whose key decodes to
// node.module.kind.name; why is empty when it is in shape.
func checkNeed(key []string, value []byte) (v needValue, why string) {
	if why = parseValue(value, &v); why != "" {
		return v, why
	}
	if why = agree([]string{"node", "module", "kind", "name"}, []*string{v.Node, v.Module, v.Kind, v.Name}, key); why != "" {
		return v, why
	}
	switch v.State {
	case "met", "waiting", "failed":
		return v, ""
	}
	return v, fmt.Sprintf("state %s is not met, waiting or failed", quoted(v.State))
}

// checkReport reads the value of the report whose key decodes to
// node.module; why is empty when it is in shape.
func checkReport(key []string, value []byte) (v reportValue, why string) {
	if why = parseValue(value, &v); why != "" {
		return v, why
	}
	if why = agree([]string{"node", "module"}, []*string{v.Node, v.Module}, key); why != "" {
		return v, why
	}
	switch v.State {
	case "applied", "waiting", "failed", "removed":
		return v, ""
	}
	return v, fmt.Sprintf("state %s is not applied, waiting, failed or removed", quoted(v.State))
}

// checkItem reads the value of the item whose key decodes to
// node.collection.contributor; why is empty when it is in shape.
func checkItem(key []string, value []byte) (v itemValue, why string) {
	if why = parseValue(value, &v); why != "" {
		return v, why
	}
	if why = agree([]string{"collection", "contributor"}, []*string{v.Collection, v.Contributor}, key[1:]); why != "" {
		return v, why
	}
	if v.Item == nil {
		return v, "value has no item"
	}
	return v, ""
}

// parseValue decodes value, a JSON object, into v; why says how it is not
// one of v's shape.
func parseValue(value []byte, v any) (why string) {
	if bytes.Equal(bytes.TrimSpace(value), []byte("null")) {
		return "value is null, not an object"
	}
	err := json.Unmarshal(value, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("value is %s, not an object", jsonKind(te.Value))
	case errors.As(err, &te):
		return fmt.Sprintf("value's %s is %s, not %s", te.Field, jsonKind(te.Value), goKind(te.Type))
	}
	return "value does not parse: " + err.Error()
}

// agree says how the value's fields disagree with the key's decoded
// tokens, one by one in the key's order; "" when they all agree (a field
// absent, nil, agrees).
func agree(names []string, fields []*string, key []string) string {
	var whys []string
	for i, n := range names {
		if f := fields[i]; f != nil && *f != key[i] {
			whys = append(whys, fmt.Sprintf("value says %s %s, key says %q", n, quoted(*f), key[i]))
		}
	}
	return strings.Join(whys, "; ")
}

// jsonKind is a JSON value's kind as encoding/json names it ("number",
// "string", "array", "object", "bool"), with its article.
func jsonKind(v string) string {
	v, _, _ = strings.Cut(v, " ") // "number 1e999"
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	}
	return "a " + v
}

// goKind is what a field of type t holds, in JSON's words.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return goKind(t.Elem())
	}
	return "a number"
}

// maxQuoted is how much of a value's field a why quotes, so that a why
// stays small beside a reply's page whatever the value holds.
const maxQuoted = 80

// quoted is s as a Go string literal, cut after maxQuoted bytes (at a
// rune's start) with its length said.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

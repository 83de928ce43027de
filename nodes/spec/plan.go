package spec

import (
	"bytes"
	"encoding/json"
	"strings"
)

// NamesAPlan says whether data, valid JSON, is an object holding a name
// that is "provisioning", or is it but for case (encoding/json matches
// names so), with a value that is not null. encoding/json keeps the last
// of such names, so {"provisioning": {…}, "provisioning": null} decodes as
// no plan where a reader taking the first, or every, name sees one: that
// value is the client's to refuse (nodes.ParseAssignment: a field given
// twice), never another domain's value (SPEC §3 r2), and the server's
// sweep takes it as the client does.
func NamesAPlan(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false
		}
		if strings.EqualFold(name, "provisioning") && string(v) != "null" {
			return true
		}
	}
	return false
}

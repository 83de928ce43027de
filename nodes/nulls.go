package nodes

import (
	"bytes"
	"encoding/json"
)

// A JSON null where a value's text stands is no value. encoding/json
// decodes {"as": null} into a map[string]string as "as": "", the empty
// text, so a provider's bound entry saying a value is not known yet, a
// placement name the controller left unresolved, or an offer's have key
// left unset was filled into files as "" and the module said applied.
// SPEC §4.1 waits for a placement name the plan does not hold, §4.6 waits
// for a key the entry lacks and fails on one the have lacks: a null is
// the name not being there. Each is decoded as before (so a value of the
// wrong type is refused with the same words) and then its nulls are taken
// out.

// nullText is the JSON text every null holds: a value without it has none
// to take out, and is not decoded twice.
var nullText = []byte("null")

// dropNulls deletes from vals each name that raw (the same JSON object,
// its values decoded as pointers) holds as null.
func dropNulls(vals map[string]string, raw map[string]*string) {
	for k, v := range raw {
		if v == nil {
			delete(vals, k)
		}
	}
}

// dropPlacementNulls takes out of a's placement every name that data, the
// assignment a was decoded from, holds as null.
func dropPlacementNulls(a *Assignment, data []byte) {
	if !bytes.Contains(data, nullText) {
		return
	}
	var p struct {
		Provisioning struct {
			Placement map[string]map[string]*string `json:"placement"`
		} `json:"provisioning"`
	}
	if json.Unmarshal(data, &p) != nil {
		return // a decodes it: not reached
	}
	for kind, names := range p.Provisioning.Placement {
		dropNulls(a.Provisioning.Placement[kind], names)
	}
}

// parseBoundEntry decodes a <provider>_bound value; a value that is null
// is one the entry lacks.
func parseBoundEntry(raw []byte) (BoundEntry, error) {
	var e BoundEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, err
	}
	if bytes.Contains(raw, nullText) {
		var p struct {
			Values map[string]*string `json:"values"`
		}
		if json.Unmarshal(raw, &p) == nil {
			dropNulls(e.Values, p.Values)
		}
	}
	return e, nil
}

// dropHaveNulls takes out of o's have every key that b, the offer object
// o was decoded from, holds as null.
func dropHaveNulls(o *Offer, b []byte) {
	if o.Have == nil || !bytes.Contains(b, nullText) {
		return
	}
	var p struct {
		Have map[string]*string `json:"have"`
	}
	if json.Unmarshal(b, &p) == nil {
		dropNulls(o.Have, p.Have)
	}
}

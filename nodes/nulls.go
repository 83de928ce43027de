package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// parseBoundEntry decodes a <provider>_bound value; a value that is null
// is one the entry lacks.
func parseBoundEntry(raw []byte) (BoundEntry, error) {
	var e BoundEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return parseLooseBoundEntry(raw, err)
		}
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

// parseLooseBoundEntry decodes a bound entry whose values are not all
// JSON strings. A provider's program that writes "port": 5432 or
// "tls": true means the text 5432 or true, and its consumers' files are
// filled with that text (the number as written: 5.0 stays 5.0); a null is
// a value the entry lacks. A value that is an object or a list has no text
// to fill: the entry is refused naming it. An entry wrong in another way
// (a state that is not text) is refused with err, encoding/json's words.
func parseLooseBoundEntry(raw []byte, err error) (BoundEntry, error) {
	var loose struct {
		State  string                     `json:"state"`
		Values map[string]json.RawMessage `json:"values"`
		Reason string                     `json:"reason"`
	}
	if json.Unmarshal(raw, &loose) != nil {
		return BoundEntry{}, err
	}
	e := BoundEntry{State: loose.State, Reason: loose.Reason}
	vals, lerr := looseTexts("values", "a bound value", loose.Values)
	if lerr != nil {
		return BoundEntry{}, lerr
	}
	e.Values = vals
	return e, nil
}

// looseTexts is the text of each value of raw, the JSON object field:
// a string unquoted, a number or true/false its JSON text, a null left
// out; an object or a list is refused naming field.key and what (what the
// values are, for the reason).
func looseTexts(field, what string, raw map[string]json.RawMessage) (map[string]string, error) {
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v[0] {
		case '"':
			var text string
			_ = json.Unmarshal(v, &text) // valid JSON: it unquotes
			out[k] = text
		case 'n': // null: not there
		case '{':
			return nil, fmt.Errorf("%s.%s is an object: %s is text, a number, true or false", field, k, what)
		case '[':
			return nil, fmt.Errorf("%s.%s is a list: %s is text, a number, true or false", field, k, what)
		default: // a number, true or false: its JSON text
			out[k] = string(v)
		}
	}
	return out, nil
}

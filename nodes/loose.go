package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A controller that writes a placement value as a number or true/false
// ("port": {"http": 8417}) means its text, as a provider's program writing
// one in a bound entry or an offer's have does (looseTexts): the plan is
// taken with the value's JSON text (the number as written, 5.0 stays 5.0).
// Read strictly, the whole plan failed on it. An object or a list there
// has no text, and still fails the plan.

// looseScalars is the assignment data with every number or true/false in
// provisioning.placement.<kind>.<name> written as a JSON string of its text; ok is false when there is none, or
// data is not such an object.
func looseScalars(data []byte) (out []byte, ok bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var top map[string]any
	if d.Decode(&top) != nil {
		return nil, false
	}
	p, _ := top["provisioning"].(map[string]any)
	if p == nil {
		return nil, false
	}
	changed := false
	text := func(m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case json.Number:
				m[k], changed = string(v), true
			case bool:
				m[k], changed = map[bool]string{true: "true", false: "false"}[v], true
			}
		}
	}
	if pl, _ := p["placement"].(map[string]any); pl != nil {
		for _, names := range pl {
			if names, _ := names.(map[string]any); names != nil {
				text(names)
			}
		}
	}
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(top)
	return out, err == nil
}

// decodeAssignment decodes data into a, taking a number or true/false
// where a placement value is text (looseScalars); the error is the
// strict decoding's when that does not help.
func decodeAssignment(data []byte, a *Assignment) error {
	err := json.Unmarshal(data, a)
	if _, typed := errors.AsType[*json.UnmarshalTypeError](err); !typed {
		return err
	}
	if loose, ok := looseScalars(data); ok {
		*a = Assignment{}
		if json.Unmarshal(loose, a) == nil {
			return nil
		}
	}
	return err
}

package nodes

import "encoding/json"

// A controller that writes a placement value as a number or true/false
// ("port": {"http": 8417}) means its text, as a provider's program writing
// one in a bound entry or an offer's have does (looseTexts): the plan is
// taken with the value's JSON text (the number as written, 5.0 stays 5.0).
// Read strictly, the whole plan failed on it. An object or a list there
// has no text, and still fails the plan, naming it.

// Placement is a plan's placement: kind → name → value.
type Placement map[string]map[string]string

// UnmarshalJSON reads each kind's values as looseTexts does (a null is a
// name the placement does not hold).
func (p *Placement) UnmarshalJSON(b []byte) error {
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	if raw == nil {
		*p = nil
		return nil
	}
	out := make(Placement, len(raw))
	for kind, names := range raw {
		if names == nil {
			out[kind] = nil
			continue
		}
		texts, err := looseTexts("placement."+kind, "a placement value", names)
		if err != nil {
			return err
		}
		out[kind] = texts
	}
	*p = out
	return nil
}

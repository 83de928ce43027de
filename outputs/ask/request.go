package ask

import (
	"encoding/json"
	"errors"
	"fmt"
)

// UnmarshalJSON reads a prov.ask request matching its field names exactly
// (case-sensitive), as SPEC §5.4 writes them: "module", "kind", "key". A
// field spelled otherwise ("Key", "MODULE") is not that field but an
// unknown one, and unknown fields are ignored: {"key":"a","Key":"b"} asks
// for a, and {"Module":"web",…} names no module (answered as one missing).
// encoding/json alone matches names case-insensitively, which let a
// request's meaning hang on which of two spellings came last. A field
// given twice exactly is the last one, as encoding/json reads it; a JSON
// null is a field left out; one not a string is refused, named.
func (q *Request) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			return fmt.Errorf("it is a JSON %s, not an object", te.Value)
		}
		return err
	}
	*q = Request{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"module", &q.Module}, {"kind", &q.Kind}, {"key", &q.Key}} {
		raw, ok := fields[f.name]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return fmt.Errorf("%s is not a JSON string", f.name)
		}
	}
	return nil
}

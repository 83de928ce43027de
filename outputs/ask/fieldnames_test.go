package ask

import (
	"context"
	"testing"
)

// prov.ask's fields are matched exactly as SPEC §5.4 writes them: a field
// spelled otherwise ("Key", "MODULE") is no field of the request, so
// {"key":"a","Key":"b"} asks for a, and {"Module":…} names no module.
// Before, Go's encoding/json matched them case-insensitively: the first was
// answered b's value, the second as if "module" had been given.
func TestProvAskFieldNamesAreMatchedExactly(t *testing.T) {
	lookup := func(_ context.Context, module, key string) ([]byte, bool, bool, error) {
		if module != "web" {
			return nil, false, false, nil
		}
		switch key {
		case "a":
			return []byte("value-of-a"), true, true, nil
		case "b":
			return []byte("value-of-b"), true, true, nil
		}
		return nil, true, false, nil
	}
	for _, c := range []struct{ req, value, err string }{
		{`{"module":"web","kind":"config","key":"a","Key":"b"}`, "value-of-a", ""},
		{`{"module":"web","kind":"config","Key":"b","key":"a"}`, "value-of-a", ""},
		{`{"Module":"web","kind":"config","key":"a"}`, "", "module and key are required"},
		{`{"MODULE":"web","Kind":"config","KEY":"a"}`, "", `no kind given: ask {"module", "kind": "config", "key"}; only config values are answered (a secret never)`},
		{`{"module":"web","kind":"config","KEY":"a"}`, "", "module and key are required"},
		{`{"module":"web","kind":"CONFIG","key":"a"}`, "", "kind CONFIG is not answered here: only config values are (a secret never)"},
		// Unknown fields are ignored, whatever they hold.
		{`{"module":"web","kind":"config","key":"a","value":"x","extra":[1,{"y":null}]}`, "value-of-a", ""},
		// A field of the wrong type is said, as before.
		{`{"module":7,"kind":"config","key":"a"}`, "", "request is not {module, kind, key}: module is not a JSON string"},
		// A JSON null is a field left out.
		{`{"module":"web","kind":"config","key":null}`, "", "module and key are required"},
	} {
		r := Answer(context.Background(), "ace", []byte(c.req), lookup)
		got := ""
		if r.Value != nil {
			got = *r.Value
		}
		if got != c.value || r.Error != c.err {
			t.Errorf("%s: value %q error %q, want %q %q", c.req, got, r.Error, c.value, c.err)
		}
	}
}

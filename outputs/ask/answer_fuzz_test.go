package ask

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A prov.ask request (SPEC §5.4), whatever its bytes: answered a config
// value the node resolved for a module assigned to it, exactly as held,
// or an error saying why; never both, never neither, never a secret.
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		`{"module":"web","kind":"config","key":"model"}`, `{"module":"web","kind":"secret","key":"api-key"}`,
		`{"module":"db","kind":"config","key":"model"}`, `{"module":"other","kind":"config","key":"model"}`,
		`{"module":"web","kind":"config","key":"latin1"}`, `{"module":"web","kind":"config"}`, `{"module":"web","key":"model"}`,
		// Field names are matched exactly (request.go): these ask for
		// nothing, or for the exactly-named field's key alone.
		`{"MODULE":"web","Kind":"config","KEY":"model"}`, `{"module":"web","kind":"config","key":"model","value":"x"}`,
		`{"module":"web","kind":"config","key":"nope","Key":"model"}`, `{"Module":"web","kind":"config","key":"model"}`,
		`{"module":7}`, `null`, `[]`, `""`, ``, `{`, `{"module":"web","kind":"config","key":"model"} trailing`,
	} {
		f.Add([]byte(s))
	}
	values := map[string][]byte{"model": []byte("opus"), "latin1": []byte("caf\xe9"), "empty": {}}
	lookup := func(_ context.Context, module, key string) ([]byte, bool, bool, error) {
		switch module {
		case "other":
			return nil, false, false, nodes.ErrNoPlan
		case "web":
			v, ok := values[key]
			return v, true, ok, nil
		}
		return nil, false, false, nil
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := Answer(context.Background(), "ace", data, lookup)
		if (r.Value == nil) == (r.Error == "") {
			t.Fatalf("%q answered %+v", data, r)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Reply
		if err := json.Unmarshal(b, &back); err != nil || (back.Value == nil) != (r.Value == nil) {
			t.Fatalf("%q: reply %s reads back as %+v, %v", data, b, back, err)
		}
		// What the request asks, read apart from Request's own decoding:
		// the fields named exactly "module", "kind", "key" (SPEC §5.4),
		// each a string or null (left out); any other field ignored.
		var fields map[string]any
		asked := json.Unmarshal(data, &fields) == nil
		q := map[string]string{}
		for _, name := range []string{"module", "kind", "key"} {
			switch v := fields[name].(type) {
			case string:
				q[name] = v
			case nil:
			default:
				asked = false
			}
		}
		if r.Value == nil {
			if asked && q["kind"] == "config" && q["module"] == "web" && values[q["key"]] != nil && !strings.Contains(r.Error, "UTF-8") {
				t.Fatalf("%q: a value resolved, yet answered %q", data, r.Error)
			}
			return
		}
		// A value: only config, of a module on the node, as held.
		if !asked || q["kind"] != "config" || q["module"] != "web" {
			t.Fatalf("%q (read as %v, %v) answered a value", data, q, asked)
		}
		if want, ok := values[q["key"]]; !ok || *r.Value != string(want) || *back.Value != *r.Value {
			t.Fatalf("%q answered %q, want %q", data, *r.Value, want)
		}
	})
}

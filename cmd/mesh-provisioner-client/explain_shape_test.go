package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestExplainJSONHasEveryFieldInEveryState: `graph explain --json` is for
// machines (SPEC §5.5), and a field left out when empty broke them: `jq
// '.outputs[].chain[]'` failed ("Cannot iterate over null") on any module
// with a met file, a step's "inputs" likewise, and `select(.why != "")`
// picked every met output (an absent why is null, not ""). Every field of
// the explanation, of each output and of each step is there in every
// state, lists as [] and texts as "" when there is nothing to say (as a
// report's fields are); "asked" alone is there only once something was
// asked or tried, and "fill" is null unless the fill socket failed the
// module.
func TestExplainJSONHasEveryFieldInEveryState(t *testing.T) {
	w := newWorld(t)
	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\nflavour = ${config:flavour}\n")
	w.assign("db", "/etc/db/a.conf", "x\n")
	w.until("2 modules on node ace: 1 applied, 1 waiting.", "status", "--control", w.sock)

	top := map[string]string{"node": "string", "module": "string", "state": "string", "since": "string", "at": "string",
		"reason": "string", "outputs": "array", "fill": "null", "not_ready": "array"}
	output := map[string]string{"kind": "string", "path": "string", "collection": "string", "secret": "string", "where": "string",
		"state": "string", "since": "string", "why": "string", "root": "bool", "chain": "array"}
	step := map[string]string{"node": "string", "kind": "string", "placeholder": "string", "where": "string", "bucket": "string",
		"key": "string", "vault": "string", "collection": "string", "contributor": "string", "state": "string", "since": "string",
		"why": "string", "root": "bool", "input": "bool", "secret": "bool", "inputs": "array"}
	var problems []string
	check := func(where string, v map[string]any, want map[string]string) {
		for k, typ := range want {
			x, ok := v[k]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: no %q", where, k))
				continue
			}
			var got string
			switch x.(type) {
			case string:
				got = "string"
			case bool:
				got = "bool"
			case []any:
				got = "array"
			case nil:
				got = "null"
			default:
				got = fmt.Sprintf("%T", x)
			}
			if got != typ {
				problems = append(problems, fmt.Sprintf("%s: %q is %s, want %s", where, k, got, typ))
			}
		}
	}
	var walk func(where string, steps []any)
	walk = func(where string, steps []any) {
		for i, s := range steps {
			m := s.(map[string]any)
			check(fmt.Sprintf("%s step %d", where, i), m, step)
			if in, ok := m["inputs"].([]any); ok {
				walk(fmt.Sprintf("%s step %d", where, i), in)
			}
		}
	}
	for _, module := range []string{"web", "db"} {
		code, out, errOut := runCLI("graph", "explain", "--json", "--control", w.sock, module)
		var e map[string]any
		if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil {
			t.Fatalf("%s: exit %d %v\n%s%s", module, code, err, out, errOut)
		}
		check(module, e, top)
		outs, _ := e["outputs"].([]any)
		if len(outs) == 0 {
			t.Fatalf("%s: no outputs\n%s", module, out)
		}
		for i, o := range outs {
			m := o.(map[string]any)
			check(fmt.Sprintf("%s output %d", module, i), m, output)
			if ch, ok := m["chain"].([]any); ok {
				walk(fmt.Sprintf("%s output %d", module, i), ch)
			}
		}
	}
	if len(problems) > 0 {
		t.Fatalf("explain --json leaves fields out or mistyped:\n%s", strings.Join(problems, "\n"))
	}
}

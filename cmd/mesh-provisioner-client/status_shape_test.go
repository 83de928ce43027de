package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestStatusJSONHasEveryFieldInEveryState: `status --json` left "reason"
// and "waiting" out of an applied module and "not_ready" out of a ready
// client, so `jq '.modules[].waiting[]'` failed on any node with an
// applied module. Every field is there in every state, as explain's are.
func TestStatusJSONHasEveryFieldInEveryState(t *testing.T) {
	w := newWorld(t)
	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\n")
	w.assign("db", "/etc/db/a.conf", "flavour = ${config:flavour}\n")
	w.until("2 modules on node ace: 1 applied, 1 waiting.", "status", "--control", w.sock)
	code, out, errOut := runCLI("status", "--json", "--control", w.sock)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errOut)
	}
	typeOf := func(x any) string {
		switch x.(type) {
		case string:
			return "string"
		case float64:
			return "number"
		case []any:
			return "array"
		case nil:
			return "null"
		}
		return fmt.Sprintf("%T", x)
	}
	var problems []string
	check := func(where string, v map[string]any, want map[string]string) {
		for k, typ := range want {
			if x, ok := v[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: no %q", where, k))
			} else if got := typeOf(x); got != typ {
				problems = append(problems, fmt.Sprintf("%s: %q is %s, want %s", where, k, got, typ))
			}
		}
	}
	check("status", m, map[string]string{"node": "string", "at": "string", "modules": "array", "not_ready": "array"})
	mods, _ := m["modules"].([]any)
	if len(mods) != 2 {
		t.Fatalf("modules: %s", out)
	}
	for _, x := range mods {
		mod := x.(map[string]any)
		check(fmt.Sprint(mod["module"]), mod, map[string]string{"module": "string", "state": "string", "files": "number",
			"files_met": "number", "since": "string", "reason": "string", "waiting": "array"})
	}
	if len(problems) > 0 {
		t.Fatalf("status --json leaves fields out or mistyped: %v\n%s", problems, out)
	}
}

package daemon

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/control"
)

// A query the control socket cannot read, or one naming two modules, is
// answered 400 saying so, not taken as another question: before,
// /v1/explain?module=%ZZ answered "name a module" (the bad pair dropped),
// /v1/graph.dot?module=%ZZ drew the whole graph, and
// /v1/explain?module=web&module=ghost explained web alone.
func TestAQueryThatDoesNotParseOrNamesTwoModulesIsSaid(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	m.settle()
	for path, want := range map[string]string{
		"/v1/explain?module=%ZZ":              `the query "module=%ZZ" does not parse`,
		"/v1/graph.dot?module=%ZZ":            `the query "module=%ZZ" does not parse`,
		"/v1/explain?module=web&module=ghost": "name one module at a time: the query names 2 (web, ghost)",
		"/v1/graph.dot?module=web&module=web": "name one module at a time: the query names 2 (web, web)",
	} {
		code, b := ctlGet(t, sock, path)
		var e control.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusBadRequest || !contains(e.Error, want) {
			t.Errorf("%s: %d %s, want 400 saying %q", path, code, b, want)
		}
	}
	// What parses is answered as before.
	if code, b := ctlGet(t, sock, "/v1/explain?module=web&other=1"); code != http.StatusOK {
		t.Fatalf("explain web: %d %s", code, b)
	}
	if code, b := ctlGet(t, sock, "/v1/graph.dot"); code != http.StatusOK || !contains(string(b), "digraph") {
		t.Fatalf("graph.dot: %d %s", code, b)
	}
}

package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §6.2 names the request's fields in lower case; another spelling
// is no field of the verb's, and a bad request gets {"error"}: before,
// encoding/json matched names case-folded, so {"Node": "g14"} narrowed
// to g14 and {"WHAT": "sweep"} swept, while an unknown field was refused.
func TestTheVerbReadsItsFieldsByTheirExactNames(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	needs := bucket(t, js, spec.NeedsBucket)
	put(t, needs, "ace.web.config.a", `{"state":"met","why":""}`)
	put(t, needs, "g14.web.config.a", `{"state":"met","why":""}`)
	serveQuery(t, nc, js)

	for body, field := range map[string]string{
		`{"what": "needs", "Node": "g14"}`:            "Node",
		`{"WHAT": "needs"}`:                           "WHAT",
		`{"What": "sweep"}`:                           "What",
		`{"what": "needs", "MODULE": "web"}`:          "MODULE",
		`{"what": "sweep", "Stood_After": "1s"}`:      "Stood_After",
		`{"what": "collect", "Collection": "x"}`:      "Collection",
		`{"what": "collect", "contributoR": "x"}`:     "contributoR",
		`{"what": "needs", "node": "ace", "Page": 0}`: "Page",
	} {
		r, raw := askRaw(t, nc, []byte(body))
		if r.Error == "" || r.Entries != nil || !strings.Contains(r.Error, `"`+field+`"`) {
			t.Errorf("%s answered %s, want {\"error\"} naming the field %q", body, raw, field)
		}
	}
	// The SPEC's own spelling still narrows.
	r, _ := ask(t, nc, map[string]any{"what": "needs", "node": "g14"})
	if got, _ := keysOf(t, r); fmtKeys(got) != fmtKeys([]string{"g14.web.config.a"}) {
		t.Errorf("node g14 answered %v", got)
	}
}

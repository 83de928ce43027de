package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A sweep narrowed to a name given as its key token (--node a=2Eb, read
// off a bucket's keys) swept the node "a=2Eb", whose keys are a=3D2Eb.…,
// and said only that nothing is assigned to it. It says which name the
// token is of, as names are given as they are (SPEC §2.1).
func TestASweepNarrowedToAKeyTokenSaysTheNameItEncodes(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	put(t, assignmentsKV(t, js), "a=2Eb.team=2Eapp", `{"provisioning":{}}`) // node a.b, module team.app
	serveQuery(t, nc, js)
	for _, c := range []struct{ node, module, says string }{
		{"a=2Eb", "", `a=2Eb is the key token of a.b: names are given as they are`},
		{"", "team=2Eapp", `team=2Eapp is the key token of team.app: names are given as they are`},
	} {
		r, err := AskSweep(testCtx(t), nc, c.node, c.module, "")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.NothingNamed, c.says) {
			t.Errorf("node %q module %q: nothing_named %q, want it to say %q", c.node, c.module, r.NothingNamed, c.says)
		}
	}
	if r, _ := AskSweep(testCtx(t), nc, "a.b", "", ""); r.NothingNamed != "" {
		t.Errorf("node a.b: nothing_named %q", r.NothingNamed)
	}
}

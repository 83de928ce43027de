package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A client started again whose first reports are those the bucket holds
// ("at" aside, not put again: SPEC §5.3) says each module in its state
// since that report's "at", in status and explain, as the bucket does.
// Before, it said every module unchanged since the restart.
func TestAfterARestartThatChangesNothingStatusSaysEachModuleSinceItsReportsAt(t *testing.T) {
	m := newMesh(t)
	p, tmpl := oneFile("web", "x\n")
	m.assign("ace", "web", p, tmpl)
	m.put(spec.AssignmentsBucket, "ace.bad", `{"provisioning":{"provisions":[{"provider":5}]}}`)
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.waitFailed("ace", "bad", "does not parse")
	m.settle()
	at := map[string]string{}
	for _, mod := range []string{"web", "bad"} {
		r, _ := m.report("ace", mod)
		at[mod], _ = r["at"].(string)
	}
	stop()

	sock := ctlSock(t)
	m.client("ace", sameState, withControl(sock))
	for mod, want := range map[string]string{"web": "applied", "bad": "failed"} {
		bustest.Eventually(t, 30*time.Second, func() error {
			if s, err := statusTry(sock, mod); err != nil || s.State != want {
				return fmt.Errorf("%s is %s (%v), want %s", mod, s.State, err, want)
			}
			return nil
		})
	}
	m.settle()
	for _, mod := range []string{"web", "bad"} {
		r, _ := m.report("ace", mod)
		if r["at"] != at[mod] {
			t.Fatalf("%s's report was written again at the restart: at %v, was %s", mod, r["at"], at[mod])
		}
		want, err := time.Parse(time.RFC3339, at[mod])
		if err != nil {
			t.Fatal(err)
		}
		if s := statusOf(t, sock, mod); !s.Since.Equal(want) {
			t.Errorf("status says %s %s since %v, its report (not written again) at %v", mod, s.State, s.Since, want)
		}
		if e, _ := explainOf(t, sock, mod); !e.Since.Equal(want) {
			t.Errorf("explain says %s %s since %v, its report (not written again) at %v", mod, e.State, e.Since, want)
		}
	}
}

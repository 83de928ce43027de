package daemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Every report, in mesh-provisioner_applied and on prov.applied, carries
// every field SPEC §5.3 lists, typed as it shows them, whatever its state:
// an applied one says "waiting": [] and "reason": "", a failed one
// "waiting": [], a removed one all of them too. A reader checking the
// report's shape (a tool reading r["reason"] of every report) finds each.
func TestEveryReportCarriesEveryFieldSPECLists(t *testing.T) {
	m := newMesh(t)
	events, err := m.nc.SubscribeSync("prov.applied.ace.>")
	if err != nil {
		t.Fatal(err)
	}
	m.webModule()
	p, tm := oneFile("w2", "a = ${config:other}\n")
	m.assign("ace", "w2", p, tm)
	m.put(spec.AssignmentsBucket, "ace.broken", `{"provisioning":`)
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "w2", "waiting")
	m.waitState("ace", "broken", "failed")
	m.del(spec.AssignmentsBucket, "ace.web")

	want := []string{"at", "files", "module", "node", "reason", "state", "waiting"}
	check := func(where string, b []byte) error {
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %v: %s", where, err, b)
		}
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			return fmt.Errorf("%s has the fields %v, want %v: %s", where, keys, want, b)
		}
		_, files := r["files"].([]any)
		_, waiting := r["waiting"].([]any)
		_, reason := r["reason"].(string)
		at, _ := r["at"].(string)
		if _, err := time.Parse(time.RFC3339, at); err != nil || !files || !waiting || !reason {
			return fmt.Errorf("%s: a field of another type than SPEC §5.3's (at %v): %s", where, err, b)
		}
		return nil
	}
	seen := map[string]bool{}
	bustest.Eventually(t, 10*time.Second, func() error {
		for {
			msg, err := events.NextMsg(10 * time.Millisecond)
			if err != nil {
				break
			}
			if err := check("the event on "+msg.Subject, msg.Data); err != nil {
				t.Error(err)
			}
			var r struct{ Module, State string }
			json.Unmarshal(msg.Data, &r)
			seen[r.Module+" "+r.State] = true
		}
		for _, s := range []string{"web applied", "w2 waiting", "broken failed", "web removed"} {
			if !seen[s] {
				return fmt.Errorf("no event of %s yet (seen %v)", s, seen)
			}
		}
		return nil
	})
	for _, mod := range []string{"w2", "broken"} {
		v, _ := m.get(spec.AppliedBucket, "ace."+mod)
		if err := check(spec.AppliedBucket+" ace."+mod, []byte(v)); err != nil {
			t.Error(err)
		}
	}
	if r, _ := m.report("ace", "broken"); !strings.Contains(fmt.Sprint(r["reason"]), "does not parse") {
		t.Errorf("a failed report's reason: %v", r["reason"])
	}
}

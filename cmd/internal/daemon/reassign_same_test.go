package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The controller writing a module's assignment again with the same plan —
// the same bytes, or the same JSON laid out otherwise — changes nothing a
// user sees: nothing is sent to the fill socket (no whole request, so no
// restart), no report, need or event is put again, and no prov.changed
// says the module was assigned (it was).
func TestAnAssignmentWrittenAgainWithTheSamePlanSendsAndWritesNothing(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.settle()
	events, _ := m.nc.SubscribeSync("prov.>")
	m.nc.Flush()
	rev, need := m.revision(spec.AppliedBucket, "ace.web"), m.revision(spec.NeedsBucket, "ace.web.config.model")
	from := m.fills.count()

	v, _ := m.get(spec.AssignmentsBucket, "ace.web")
	m.put(spec.AssignmentsBucket, "ace.web", v)
	var a map[string]any
	if err := json.Unmarshal([]byte(v), &a); err != nil {
		t.Fatal(err)
	}
	indented, _ := json.MarshalIndent(a, "", "\t") // keys sorted, laid out otherwise
	if string(indented) == v {
		t.Fatal("the test's second layout is the first")
	}
	m.put(spec.AssignmentsBucket, "ace.web", string(indented))
	time.Sleep(300 * time.Millisecond) // two batches' time for anything to come out
	m.settle()

	if got := m.fills.requests("web", from); len(got) != 0 {
		t.Fatalf("the same plan again sent %d fill requests (the first whole=%v of %d files)", len(got), got[0].Whole, len(got[0].Files))
	}
	if r := m.revision(spec.AppliedBucket, "ace.web"); r != rev {
		t.Fatalf("the report was put again: revision %d → %d", rev, r)
	}
	if r := m.revision(spec.NeedsBucket, "ace.web.config.model"); r != need {
		t.Fatalf("a need was put again: revision %d → %d", need, r)
	}
	if msg, err := events.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("an event went out: %s %s", msg.Subject, msg.Data)
	}
}

package daemon

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An applied module's plan moves to a templates archive the client does
// not hold yet: it was reported waiting ("not fetched yet"), then applied
// a moment later (an outside audit: two reports and events a module at
// every roll-out of an archive). It is held while the archive is fetched:
// one report, applied, saying the file the new template wrote.
func TestAModuleWhosePlanMovesToANewArchiveIsNotReportedWaitingWhileItIsFetched(t *testing.T) {
	m := newMesh(t)
	plan := nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/app/a.conf", Template: "a"}}}
	m.assign("ace", "app", plan, map[string]string{"a": "one\n"})
	m.client("ace")
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/a.conf", "one\n")

	events := make(chan *nats.Msg, 16)
	sub, err := m.nc.ChanSubscribe(spec.AppliedSubject("ace", "app"), events)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.nc.Flush()
	m.assign("ace", "app", plan, map[string]string{"a": "two\n", "unused": "three\n"})
	m.waitFile("/etc/app/a.conf", "two\n")
	time.Sleep(300 * time.Millisecond) // a report after the file's would be out by now
	var states []string
	for len(events) > 0 {
		var r struct{ State string }
		json.Unmarshal((<-events).Data, &r)
		states = append(states, r.State)
	}
	if !slices.Equal(states, []string{"applied"}) {
		t.Fatalf("the module's events said %v, want one applied", states)
	}
}

// Held while its new archive is fetched, a module whose fetch fails is
// said failed as soon as it does, not after the hold's 5 s.
func TestAModuleWhoseNewArchiveFailsIsReportedAtOnce(t *testing.T) {
	m := newMesh(t)
	plan := nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/app/a.conf", Template: "a"}}}
	m.assign("ace", "app", plan, map[string]string{"a": "one\n"})
	m.client("ace")
	m.waitState("ace", "app", "applied")
	plan.Templates.Ref, _ = m.archive("other", map[string]string{"a": "two\n"})
	plan.Templates.Digest = "sha256:" + strings.Repeat("0", 64) // not what the archive is
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "app", Provisioning: plan})
	start := time.Now()
	m.put(spec.AssignmentsBucket, spec.EncodeKey("ace", "app"), string(b))
	m.waitStateFor("ace", "app", "failed", nodes.ArchiveHold-time.Second)
	t.Logf("failed %v after the plan moved", time.Since(start).Round(time.Millisecond))
}

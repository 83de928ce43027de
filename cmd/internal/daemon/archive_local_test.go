package daemon

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes"
)

// appliedStates subscribes to prov.applied.ace.<module> and returns what
// reads the states its events said since, in order (the subscription
// drained once the client is settled).
func appliedStates(t *testing.T, m *mesh, module string) func() []string {
	t.Helper()
	sub, err := m.nc.SubscribeSync("prov.applied.ace." + module)
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	t.Cleanup(func() { sub.Unsubscribe() })
	var states []string
	return func() []string {
		for {
			msg, err := sub.NextMsg(100 * time.Millisecond)
			if err == nats.ErrTimeout {
				return states
			}
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				State string `json:"state"`
			}
			json.Unmarshal(msg.Data, &r)
			states = append(states, r.State)
			t.Logf("%s %s", msg.Subject, msg.Data)
		}
	}
}

// sharedArchivePlan is a plan writing path from the shared archive ref
// and digest.
func sharedArchivePlan(path, ref, digest string) nodes.Plan {
	p := nodes.Plan{Files: []nodes.FileSpec{owned(path, "conf", "")}}
	p.Templates.Ref, p.Templates.Digest = ref, digest
	return p
}

// Two modules share a templates archive D ("one" got it, "two" was given
// it: SPEC §3, kept by digest), then "one" moves to another archive E.
// The client still holds D (two holds it ready), so a module newly
// assigned with D is given two's copy (nodes' shareArchive), as two was
// given one's. It used to be sent to the fetcher, which read D back from
// memory, and was reported waiting ("templates archive …: not fetched
// yet": a put and a prov.applied event) and applied within the same
// second: a report saying a wait that never was (SPEC §5.3).
func TestANewModuleOfAnArchiveTheClientHoldsIsNotReportedWaitingForIt(t *testing.T) {
	m := newMesh(t)
	ref, digest := m.archive("shared", map[string]string{"conf": "port=1\n"})
	eRef, eDigest := m.archive("other", map[string]string{"conf": "port=2\n"})
	m.assign("ace", "one", sharedArchivePlan("/etc/one.conf", ref, digest), nil)
	m.client("ace")
	m.waitState("ace", "one", "applied")
	m.assign("ace", "two", sharedArchivePlan("/etc/two.conf", ref, digest), nil)
	m.waitState("ace", "two", "applied")
	m.assign("ace", "one", sharedArchivePlan("/etc/one.conf", eRef, eDigest), nil)
	m.waitFile("/etc/one.conf", "port=2\n")
	m.settle()

	states := appliedStates(t, m, "three")
	m.assign("ace", "three", sharedArchivePlan("/etc/three.conf", ref, digest), nil)
	m.waitFile("/etc/three.conf", "port=1\n")
	m.waitState("ace", "three", "applied")
	m.settle()
	if got := states(); len(got) != 1 || got[0] != "applied" {
		t.Errorf("a module of an archive the client holds said %v, want [applied] alone", got)
	}
}

// A module's plan moves from archive D to E and back to D while another
// module's plan keeps D: it is given the other's copy. Its report went
// applied → waiting → applied within a second, a flap a tool watching
// prov.applied sees for an archive that was never not there.
func TestAPlanMovedBackToAnArchiveTheClientHoldsDoesNotFlapWaiting(t *testing.T) {
	m := newMesh(t)
	ref, digest := m.archive("shared", map[string]string{"conf": "port=1\n"})
	eRef, eDigest := m.archive("other", map[string]string{"conf": "port=2\n"})
	m.assign("ace", "one", sharedArchivePlan("/etc/one.conf", ref, digest), nil)
	m.client("ace")
	m.waitState("ace", "one", "applied")
	m.assign("ace", "two", sharedArchivePlan("/etc/two.conf", ref, digest), nil)
	m.waitState("ace", "two", "applied")
	m.assign("ace", "one", sharedArchivePlan("/etc/one.conf", eRef, eDigest), nil)
	m.waitFile("/etc/one.conf", "port=2\n")
	m.waitState("ace", "one", "applied")
	m.settle()

	states := appliedStates(t, m, "one")
	m.assign("ace", "one", sharedArchivePlan("/etc/one.conf", ref, digest), nil)
	m.waitFile("/etc/one.conf", "port=1\n")
	m.waitState("ace", "one", "applied")
	m.settle()
	if got := states(); len(got) != 1 || got[0] != "applied" {
		t.Errorf("a plan moved back to an archive the client holds said %v, want [applied] alone", got)
	}
}

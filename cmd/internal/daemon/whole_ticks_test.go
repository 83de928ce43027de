package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// wholeOfEvery says whether each of reqs is a whole request (SPEC §4.3
// r2) naming exactly paths, in any order.
func wholeOfEvery(reqs []fill.Request, paths ...string) error {
	want := strings.Join(paths, ",")
	for _, r := range reqs {
		var got []string
		for _, f := range r.Files {
			got = append(got, f.Path)
		}
		if !r.Whole || strings.Join(got, ",") != want {
			return fmt.Errorf("request whole=%v of %v, want whole of %s", r.Whole, got, want)
		}
	}
	return nil
}

var webPaths = []string{"/etc/web/a.conf", "/etc/web/b.conf", "/etc/web/c.conf"}

// The refill tick sends every filled file of a module again, in one whole
// request (SPEC §4.3: "all of them … on the refill tick", "whole": true),
// and a tick that changes nothing on disk writes no report and no need
// (§5.3).
func TestTheRefillTickSendsEveryFileInAWholeRequestAndRewritesNoReport(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace", refillEvery(200*time.Millisecond))
	m.waitState("ace", "web", "applied")
	m.settle()
	rev, need := m.revision(spec.AppliedBucket, "ace.web"), m.revision(spec.NeedsBucket, "ace.web.config.model")
	from := m.fills.count()
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := len(m.fills.requests("web", from)); n < 3 {
			return fmt.Errorf("%d refills so far", n)
		}
		return nil
	})
	if err := wholeOfEvery(m.fills.requests("web", from), webPaths...); err != nil {
		t.Fatal(err)
	}
	m.settle()
	if r := m.revision(spec.AppliedBucket, "ace.web"); r != rev {
		t.Fatalf("refills that changed nothing rewrote the report: revision %d → %d", rev, r)
	}
	if r := m.revision(spec.NeedsBucket, "ace.web.config.model"); r != need {
		t.Fatalf("refills rewrote a need: revision %d → %d", need, r)
	}
}

// When the bus comes back the client fills from the current values with
// one whole request per module (SPEC §4.3, §4.7), although no value moved,
// so what the node-engine lost meanwhile is put back.
func TestAReconnectSendsEveryFileInAWholeRequest(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.settle()
	from := m.fills.count()

	bustest.Stop(m.s)
	m.s = bustest.Start(t, m.again)
	m.connect()
	bustest.Eventually(t, 30*time.Second, func() error {
		if len(m.fills.requests("web", from)) == 0 {
			return fmt.Errorf("no fill since the bus came back")
		}
		return nil
	})
	if err := wholeOfEvery(m.fills.requests("web", from), webPaths...); err != nil {
		t.Fatal(err)
	}
}

// A plan change drops a file: the whole request it sends has the
// node-engine remove it, and the report no longer lists it. The refill
// ticks after it change nothing on disk, so they rewrite no report (SPEC
// §5.3): the report used to list the file "removed" once and drop it at
// the next tick, a put a minute after every plan change that dropped a
// file, saying nothing new.
func TestARefillTickAfterAFileWasRemovedRewritesNoReport(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	m.client("ace", f.socket, refillEvery(500*time.Millisecond))
	m.waitState("ace", "web", "applied")
	m.settle()
	p := webPlan()
	p.Files = p.Files[:2]
	m.assign("ace", "web", p, webTemplates)
	m.waitNoFile("/etc/web/c.conf")
	var rev uint64
	bustest.Eventually(t, 10*time.Second, func() error {
		e, err := m.kv(spec.AppliedBucket).Get(t.Context(), "ace.web")
		if err != nil {
			return err
		}
		var r map[string]any
		json.Unmarshal(e.Value(), &r)
		if got := reportFiles(r); len(got) != 2 || got["/etc/web/c.conf"] != "" {
			return fmt.Errorf("report files %v", got)
		}
		rev = e.Revision()
		return nil
	})
	from := m.fills.count()
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := len(m.fills.requests("web", from)); n < 3 {
			return fmt.Errorf("%d refills so far", n)
		}
		return nil
	})
	if err := wholeOfEvery(m.fills.requests("web", from), webPaths[:2]...); err != nil {
		t.Fatal(err)
	}
	m.settle()
	if r := m.revision(spec.AppliedBucket, "ace.web"); r != rev {
		v, _ := m.get(spec.AppliedBucket, "ace.web")
		t.Fatalf("refills that changed nothing rewrote the report: revision %d → %d: %s", rev, r, v)
	}
}

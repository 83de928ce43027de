package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module's needs are its templates' placeholders (SPEC §5.2: deleted
// when no template of the module names them any more). While its
// templates cannot be read (a new plan's archive not fetched yet, or a
// client started again without its cache and the archive's source away)
// nothing says the placeholders went: the needs stay as they were, met
// and waiting ones alike, rather than being deleted and written again
// once the archive is in (the waiting need that held the module back
// gone from the server's sweep meanwhile, and its entry time, which the
// sweep judges "stood asked" by, reset: §6.2).
func TestNeedsStayWhileTheModulesTemplatesCannotBeRead(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.put(spec.ConfigBucket, "ace.web.x", "1")
	tmpl := map[string]string{"k": "${config:x} ${config:y}\n"}
	plan := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "k", "")}}
	m.assign("ace", "web", plan, tmpl)
	_, stop := m.startClient("ace", f.socket)
	m.waitState("ace", "web", "waiting")
	m.settle()
	was := m.revisions()

	// A new plan whose archive is not at its ref yet.
	ref, digest := m.archive("ace-web-2", map[string]string{"k": tmpl["k"], "other": "x\n"})
	os.Rename(filepath.Join(m.tmpl, "ace-web-2.tar.gz"), filepath.Join(m.tmpl, "later"))
	plan.Templates.Ref, plan.Templates.Digest = ref, digest
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: plan})
	m.put(spec.AssignmentsBucket, "ace.web", string(b))
	m.waitWaiting("ace", "web", "not there yet")
	m.settle()
	if moved := movedRevisions(was, m.revisions()); len(moved) != 1 || moved[0][:len(spec.AppliedBucket)] != spec.AppliedBucket {
		t.Errorf("while the new plan's archive is fetched, the needs moved: %v", moved)
	}
	os.Rename(filepath.Join(m.tmpl, "later"), filepath.Join(m.tmpl, "ace-web-2.tar.gz"))
	m.waitWaiting("ace", "web", "ace.web.y: not written yet")
	m.settle()
	needs := func() map[string]uint64 {
		out := map[string]uint64{}
		for k, r := range m.revisions() {
			if k[:len(spec.NeedsBucket)] == spec.NeedsBucket {
				out[k] = r
			}
		}
		return out
	}
	wasNeeds := needs()
	if len(wasNeeds) != 2 {
		t.Fatalf("needs %v, want config x and y", wasNeeds)
	}
	for k, r := range wasNeeds {
		if was[k] != r {
			t.Errorf("%s: revision %d, then %d: the new plan names the same placeholders", k, was[k], r)
		}
	}

	// Started again without its cache, the archive's source away.
	stop()
	os.Rename(filepath.Join(m.tmpl, "ace-web-2.tar.gz"), filepath.Join(m.tmpl, "later"))
	m.client("ace", f.socket) // a state dir of its own: no cache
	m.waitWaiting("ace", "web", "not there yet")
	time.Sleep(300 * time.Millisecond) // the retry ticks' syncs
	m.settle()
	if moved := movedRevisions(wasNeeds, needs()); len(moved) > 0 {
		t.Errorf("a client started without the module's templates moved its needs: %v", moved)
	}
}

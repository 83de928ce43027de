package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The assignments bucket missing says nothing of what is assigned (SPEC
// §2.2: a missing bucket is waited for). It used to take every module off
// the node: mesh-fill removed every file, and every module was reported
// removed (held.go).

func (m *mesh) notesModule() {
	m.t.Helper()
	m.assign("ace", "notes", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/notes/n.conf", Template: "n"}},
		Placement: map[string]map[string]string{"dir": {"state": "/var/lib/notes"}}},
		map[string]string{"n": "notes at ${dir:state}\n"})
}

// onDisk says whether path exists under the fill root.
func (m *mesh) onDisk(path string) bool {
	_, err := os.Stat(filepath.Join(m.root, path))
	return err == nil
}

func TestAnAssignmentsBucketDeletedTakesNoModuleOffTheNode(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	m.notesModule()
	m.client("ace", f.socket)
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "notes", "applied")

	if err := m.js.DeleteKeyValue(context.Background(), spec.AssignmentsBucket); err != nil {
		t.Fatal(err)
	}
	// Said missing once the watch's looks for a bucket made again at once
	// (bus.Watch.GoneGrace) found none.
	bustest.Eventually(t, 10*time.Second, func() error {
		if !contains(m.logs.String(), "every module is kept as it is until the assignments bucket can be read again") {
			return fmt.Errorf("no log line says the modules are kept")
		}
		return nil
	})
	time.Sleep(time.Second) // what a removal would take, several times over
	for _, p := range []string{"/etc/web/a.conf", "/etc/web/b.conf", "/etc/web/c.conf", "/etc/notes/n.conf"} {
		if !m.onDisk(p) {
			t.Errorf("%s removed while the assignments bucket was missing", p)
		}
	}
	for _, mod := range []string{"web", "notes"} {
		if r, ok := m.report("ace", mod); !ok || r["state"] != "applied" {
			t.Errorf("report of %s %v (present %v), want applied kept", mod, r["state"], ok)
		}
	}

	// Made again holding web alone: notes is gone, and only now removed.
	m.bucket(spec.AssignmentsBucket)
	m.webModule()
	bustest.Eventually(t, 5*time.Second, func() error {
		if m.onDisk("/etc/notes/n.conf") {
			return fmt.Errorf("notes' file still there")
		}
		if _, ok := m.report("ace", "notes"); ok {
			return fmt.Errorf("notes' report still there")
		}
		return nil
	})
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

// A client started while the assignments bucket is missing waits for it:
// its start-time clean-up (SPEC §4.7) took every key of its last run for a
// module's that left, and had mesh-fill remove every file.
func TestAClientStartedWithoutTheAssignmentsBucketRemovesNothingOfItsLastRun(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.webModule()
	_, stop := m.startClient("ace", f.socket)
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
	stop()

	if err := m.js.DeleteKeyValue(context.Background(), spec.AssignmentsBucket); err != nil {
		t.Fatal(err)
	}
	d := m.client("ace", f.socket)
	bustest.Eventually(t, 5*time.Second, func() error {
		if !contains(m.logs.String(), "bucket not there yet") {
			return fmt.Errorf("the client has not looked for the bucket yet")
		}
		return nil
	})
	time.Sleep(time.Second)
	if !m.onDisk("/etc/web/a.conf") {
		t.Fatal("a.conf removed by a client that never read the assignments")
	}
	if r, ok := m.report("ace", "web"); !ok || r["state"] != "applied" {
		t.Fatalf("report %v (present %v), want applied kept", r["state"], ok)
	}
	if not := d.notReady(); len(not) != 2 || not[1] != "the assignments bucket is not there" {
		t.Fatalf("not ready: %q", not)
	}

	m.bucket(spec.AssignmentsBucket)
	m.webModule()
	bustest.Eventually(t, 5*time.Second, func() error {
		if not := d.notReady(); len(not) != 0 {
			return fmt.Errorf("not ready: %q", not)
		}
		return nil
	})
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitState("ace", "web", "applied")
}

// The assignments bucket made again empty is the controller's word: every
// module goes (a bucket missing is waited for; an empty one is not), and
// one warning says how many went at once, beside each module's own line.
func TestAnAssignmentsBucketMadeAgainEmptyTakesItsModulesOffWithAWarning(t *testing.T) {
	m := newMesh(t)
	m.webAndNotesTakenOffAtOnce(func() {
		if err := m.js.DeleteKeyValue(context.Background(), spec.AssignmentsBucket); err != nil {
			t.Fatal(err)
		}
		m.bucket(spec.AssignmentsBucket)
	})
}

// webAndNotesTakenOffAtOnce fills web and notes on a client of a
// mesh-fill that keeps its state, empties the assignments by empty, and
// waits for both modules gone: their files removed, their reports
// deleted, and one warning that two went at once.
func (m *mesh) webAndNotesTakenOffAtOnce(empty func()) {
	m.t.Helper()
	f := m.stateFill()
	m.webModule()
	m.notesModule()
	m.client("ace", f.socket)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "notes", "applied")

	empty()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		for _, p := range []string{"/etc/web/a.conf", "/etc/notes/n.conf"} {
			if m.onDisk(p) {
				return fmt.Errorf("%s still there", p)
			}
		}
		for _, mod := range []string{"web", "notes"} {
			if _, ok := m.report("ace", mod); ok {
				return fmt.Errorf("report of %s still there", mod)
			}
		}
		if !contains(m.logs.String(), `"modules":2`) || !contains(m.logs.String(), "several modules taken off this node at once") {
			return fmt.Errorf("no warning of the two modules going at once")
		}
		return nil
	})
}

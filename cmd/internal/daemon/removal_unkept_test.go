package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module leaves the node while mesh-fill is down and the state dir
// cannot keep the removal (removals.json cannot be written: a state dir
// gone read-only, a full disk; here a directory stands at its path), and
// the client is restarted before either comes back. Its applied key is
// then the only record that the module's files are to go: it stays, with
// its needs, while the removal is neither answered nor kept, so the next
// start's clean-up finds it and has mesh-fill remove the file; once the
// node-engine answered, the keys go. Before, the applied key was deleted
// as the module left: the restart knew nothing of the module, and its
// file stayed with the node-engine for good, the only word of it a
// warning that "a restart meanwhile forgets them".
func TestAModuleGoneWhoseRemovalTheStateDirCannotKeepIsStillRemovedAfterARestart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	state := t.TempDir()
	blocker := filepath.Join(state, "removals.json", "x")
	if err := os.MkdirAll(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	m.put(spec.ConfigBucket, "ace.gone.model", "opus")
	m.assign("ace", "gone", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/gone.conf", "conf", "")}},
		map[string]string{"conf": "model = ${config:model}\n"})
	inState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, inState)
	m.waitFile("/etc/gone.conf", "model = opus\n")
	m.waitState("ace", "gone", "applied")

	f.stop()
	m.del(spec.AssignmentsBucket, "ace.gone")
	bustest.Eventually(t, 10*time.Second, func() error {
		logs := m.logs.String()
		if !strings.Contains(logs, "pending removals not saved") || !strings.Contains(logs, `"module":"gone","state":"removed"`) {
			return fmt.Errorf("the client has not taken gone off the node yet")
		}
		return nil
	})
	m.settle()
	stop()

	f.start()
	m.client("ace", f.socket, inState)
	m.waitNoFile("/etc/gone.conf")
	m.waitGone(spec.AppliedBucket, "ace.gone")
	m.waitGone(spec.NeedsBucket, "ace.gone.config.model")
}

// The same, restarted twice before mesh-fill is back: the second run's
// clean-up at start finds the applied key of the module gone, cannot keep
// its removal either, and so keeps the key for the third run, which has
// mesh-fill remove the file. Before the second run's fix, the start's
// clean-up deleted the key before it tried to keep the removal.
func TestARemovalTheStateDirCannotKeepOutlivesTwoRestarts(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "removals.json", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	m.put(spec.ConfigBucket, "ace.gone.model", "opus")
	m.assign("ace", "gone", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/gone.conf", "conf", "")}},
		map[string]string{"conf": "model = ${config:model}\n"})
	inState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, inState)
	m.waitState("ace", "gone", "applied")

	f.stop()
	m.del(spec.AssignmentsBucket, "ace.gone")
	notSaved := func(n int) {
		t.Helper()
		bustest.Eventually(t, 10*time.Second, func() error {
			if got := strings.Count(m.logs.String(), "pending removals not saved"); got < n {
				return fmt.Errorf("the removal was tried to be kept %d times, want %d", got, n)
			}
			return nil
		})
	}
	notSaved(1)
	m.settle()
	stop()

	_, stop = m.startClient("ace", f.socket, inState) // mesh-fill still down
	notSaved(2)
	m.settle()
	stop()
	if _, ok := m.report("ace", "gone"); !ok {
		t.Fatal("the second run deleted the applied key of the module gone: nothing records its removal any more")
	}

	f.start()
	m.client("ace", f.socket, inState)
	m.waitNoFile("/etc/gone.conf")
	m.waitGone(spec.AppliedBucket, "ace.gone")
}

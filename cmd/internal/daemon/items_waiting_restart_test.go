package daemon

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An item that waits (its config key deleted) stays recorded in the collect
// bucket and in its collectors' files (SPEC §4.4: ${collected:C} is every
// item of C recorded for this node). So it does across a restart of the
// client while it still waits: the collector's file is not rewritten
// without it, nor its program restarted, and once the value is back the
// item, rendered the same, moves nothing either. Before, the restarted
// client left the item out (it had not been ready in this run) while the
// bucket still held it: the collector's file lost the line and its program
// was restarted, and both again when the item was ready.
func TestAnItemWaitingAcrossARestartStaysInItsCollectorsFile(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.restartingCollector("ace", "zsh")
	m.put(spec.ConfigBucket, "ace.git.cmd", "git")
	m.contribute("ace", "git", "alias g=${config:cmd}\n")
	m.contribute("ace", "fzf", "source fzf.zsh\n")
	state := t.TempDir() // one state dir across the restart, as a node's
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	const with = "# managed by mesh\n## fzf\nsource fzf.zsh\n## git\nalias g=git\n"
	m.waitFile("/etc/zsh/zshrc", with)
	m.waitState("ace", "zsh", "applied")

	m.del(spec.ConfigBucket, "ace.git.cmd")
	m.waitWaiting("ace", "git", "config")
	m.settle()
	key := zshKey("ace", "git")
	item := itemJSON(zshColl, "git", "alias g=git\n")
	restarts := f.programRestarts()
	untouched := func(when string) {
		t.Helper()
		m.settle()
		if v, ok := m.get(spec.CollectBucket, key); !ok || v != item {
			t.Fatalf("%s: git's item is %q (there: %v), want %q", when, v, ok, item)
		}
		if text, _, _ := m.file("/etc/zsh/zshrc"); text != with {
			t.Errorf("%s: the collector's file is %q, want %q", when, text, with)
		}
		if got := f.programRestarts(); got != restarts {
			t.Errorf("%s: the collector's program was restarted: %q", when, strings.TrimPrefix(got, restarts))
		}
	}
	untouched("while git waits")

	stop()
	m.startClient("ace", f.socket, sameState)
	m.waitState("ace", "zsh", "applied")
	m.waitWaiting("ace", "git", "config")
	untouched("after the restart")

	m.put(spec.ConfigBucket, "ace.git.cmd", "git")
	m.waitState("ace", "git", "applied")
	untouched("once git's value is back")
}

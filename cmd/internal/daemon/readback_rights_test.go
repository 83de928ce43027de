package daemon

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The start's read-back (stage.ReadingBack: the applied and collect buckets
// read before the first fill) works under exactly the client's rights of
// examples/nats/server.conf (nodes/spec RightsOf): a client restarted
// while a contributor's plan does not parse keeps the item the last run
// recorded in its collector's file, and its first fill does not wait for
// the read-back at all. Were the client's rights short of reading its own
// collect or applied keys, every start would wait stage.ReadBackWait (30 s) and
// then drop the item.
func TestTheStartsReadBackNeedsNoMoreThanTheClientsExampleRights(t *testing.T) {
	m := exampleBus(t)
	m.contribute("ace", "alpha", "a\n")
	m.contribute("ace", "beta", "export B=1\n")
	m.restartingCollector("ace", "zsh")
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", asUser("provisioner-ace"), sameState)
	m.waitFile("/etc/zsh/zshrc", zshWithBeta)
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "beta", "applied")
	m.settle()
	stop()
	m.put(spec.AssignmentsBucket, "ace.beta", `garbage{`) // broken while the client is down

	m.client("ace", asUser("provisioner-ace"), sameState)
	m.waitFailed("ace", "beta", "the assignment is not JSON")
	m.waitState("ace", "zsh", "applied")
	m.settle()
	if text, _, _ := m.file("/etc/zsh/zshrc"); text != zshWithBeta {
		t.Errorf("the collector's file is %q, want %q", text, zshWithBeta)
	}
	if logs := m.logs.String(); strings.Contains(logs, "the first fill waits for what the last run left") {
		t.Errorf("the first fill waited for the read-back under the example rights:\n%s", logs)
	}
}

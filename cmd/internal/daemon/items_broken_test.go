package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A contributor's plan replaced by a value that does not parse (garbage,
// truncated JSON, a field of the wrong type) fails that module alone (SPEC
// §3: "the other modules are untouched"): its item stays recorded in the
// collect bucket (same revision) and in the collector's file, which is
// neither filled again nor its program restarted — while the client runs,
// and across a restart of the client while the plan still does not parse.
// Fixed, the item is rendered from the new plan and recorded only if it
// changed. Before, the item left the bucket and the collector's file at
// once (its program restarted), and came back when the plan was fixed
// (restarted again). A plan that parses but breaks a rule, or whose
// template does not parse, keeps the item the same way; a plan with no
// provisioning (the module leaving) takes it out.
func TestAContributorsPlanThatDoesNotParseKeepsItsItem(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.contribute("ace", "alpha", "a\n")
	m.contribute("ace", "beta", "export B=1\n")
	m.restartingCollector("ace", "zsh")
	good, _ := m.get(spec.AssignmentsBucket, "ace.beta")
	// One state dir across the restart, as a node's: its archives are read
	// back at start (a fresh one fetches them after the first fill, and
	// alpha's item, waiting since the start, would be left out a while).
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	const with = "# managed by mesh\n## alpha\na\n## beta\nexport B=1\n"
	const without = "# managed by mesh\n## alpha\na\n"
	m.waitFile("/etc/zsh/zshrc", with)
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "beta", "applied")
	m.settle()
	key := zshKey("ace", "beta")
	item := itemJSON(zshColl, "beta", "export B=1\n")
	rev := m.revision(spec.CollectBucket, key)
	restarts := f.programRestarts()

	untouched := func(when string) {
		t.Helper()
		m.settle()
		if v, ok := m.get(spec.CollectBucket, key); !ok || v != item {
			t.Fatalf("%s: beta's item is %q (there: %v), want %q", when, v, ok, item)
		}
		if r := m.revision(spec.CollectBucket, key); r != rev {
			t.Errorf("%s: beta's item was written again: revision %d → %d", when, rev, r)
		}
		if text, _, _ := m.file("/etc/zsh/zshrc"); text != with {
			t.Errorf("%s: the collector's file is %q, want %q", when, text, with)
		}
		if got := f.programRestarts(); got != restarts {
			t.Errorf("%s: the collector's program was restarted: %q", when, strings.TrimPrefix(got, restarts))
		}
		if r, _ := m.report("ace", "zsh"); r["state"] != "applied" {
			t.Errorf("%s: the collector is %v", when, r)
		}
	}

	for _, broken := range []struct{ value, says string }{
		{`{"provisioning":{"items":[{"collection":"shell:zsh:normal","temp`, "assignment JSON does not parse"},
		{`garbage{`, "the assignment is not JSON"},
		{`{"provisioning":{"items":[{"collection":5}]}}`, "assignment JSON does not parse"},
	} {
		m.put(spec.AssignmentsBucket, "ace.beta", broken.value)
		m.waitFailed("ace", "beta", broken.says)
		untouched("beta's plan is " + broken.value)
	}

	// The client restarted while beta's plan still does not parse: the
	// item the last run recorded stays, in the bucket and in the file.
	stop()
	_, stop = m.startClient("ace", f.socket, sameState)
	m.waitFailed("ace", "beta", "assignment JSON does not parse")
	m.waitState("ace", "zsh", "applied")
	untouched("the client restarted while beta's plan does not parse")

	// Fixed as it was: nothing moves.
	m.put(spec.AssignmentsBucket, "ace.beta", good)
	m.waitState("ace", "beta", "applied")
	untouched("beta's plan fixed")

	// Broken, then fixed with another text: recorded and filled again.
	m.put(spec.AssignmentsBucket, "ace.beta", `{"provisioning":{`)
	m.waitFailed("ace", "beta", "assignment JSON does not parse")
	untouched("beta's plan broken again")
	m.contribute("ace", "beta", "export B=2\n")
	m.waitValue(spec.CollectBucket, key, itemJSON(zshColl, "beta", "export B=2\n"))
	m.waitFile("/etc/zsh/zshrc", strings.Replace(with, "B=1", "B=2", 1))

	// A plan that parses but breaks a rule, or whose template does not
	// parse, fails beta alone too (SPEC §3 names both): its item stays.
	before := f.programRestarts()
	m.contribute("ace", "beta", "export B=1\n")
	m.waitFile("/etc/zsh/zshrc", with)
	m.waitValue(spec.CollectBucket, key, item)
	// The file is written before its program is restarted: that restart
	// is this change's, not one of the steps below (a loaded machine saw
	// it land after the count was taken).
	bustest.Eventually(t, 10*time.Second, func() error {
		if f.programRestarts() == before {
			return fmt.Errorf("the collector's program is not restarted yet")
		}
		return nil
	})
	// And every restart it led to is in (a loaded machine saw the
	// collector filled twice on the way, the second restart landing
	// after the count).
	bustest.Eventually(t, 10*time.Second, func() error {
		was := f.programRestarts()
		m.settle()
		time.Sleep(300 * time.Millisecond)
		if f.programRestarts() != was {
			return fmt.Errorf("the collector's program is still being restarted")
		}
		return nil
	})
	rev, restarts = m.revision(spec.CollectBucket, key), f.programRestarts()
	m.assign("ace", "beta", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/beta", Template: "item", Mode: "999"}},
		Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"item": "export B=2\n"})
	m.waitFailed("ace", "beta", "999")
	untouched("beta's plan breaks a rule")
	m.assign("ace", "beta", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/beta", Template: "conf"}},
		Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"conf": "b = ${config:k\n", "item": "export B=2\n"})
	m.waitFailed("ace", "beta", "conf")
	untouched("beta's template does not parse")
	// The client restarted on it (its archive read back from the state
	// dir, the module failed at once): the item stays (an outside audit:
	// deleted, the collector rewritten and restarted).
	stop()
	m.client("ace", f.socket, sameState)
	m.waitFailed("ace", "beta", "conf")
	m.waitState("ace", "zsh", "applied")
	untouched("the client restarted while beta's template does not parse")

	// A value with no plan is beta leaving: its item goes.
	m.put(spec.AssignmentsBucket, "ace.beta", `{"node":"ace","module":"beta"}`)
	m.waitGone(spec.CollectBucket, key)
	m.waitFileFor("/etc/zsh/zshrc", without, 10*time.Second)
}

// A contributor whose plan parsed in the start's snapshot and stops
// parsing while the first fill waits for the vault's first answers
// (firstLooks) keeps its item as the last run recorded it, as one whose
// plan did not parse in the snapshot does: the collect key, the
// collector's file and its program stay as they are (SPEC §3: the other
// modules are untouched). Before, its item nodes, made from the plan that
// parsed but never computed, were held with no text, and the last run's
// items (ItemsBefore) were not handed to a module that already held some:
// the collector's file was rewritten without it and its program restarted.
func TestAContributorsPlanBrokenDuringTheFirstLookWaitKeepsItsItem(t *testing.T) {
	m := newMesh(t)
	b := m.betaRunOnceAndStopped()
	b.restartWaitingForTheVault()
	m.put(spec.AssignmentsBucket, "ace.beta", `garbage{`)
	b.kept()
}

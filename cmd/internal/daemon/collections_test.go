package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

const zshColl = "shell:zsh:normal"

// zshKey is the collect bucket's key of node's item of module in zsh:normal.
func zshKey(node, module string) string { return spec.EncodeKey(node, zshColl, module) }

func itemJSON(collection, contributor, text string) string {
	b, _ := json.Marshal(report.Item{Collection: collection, Contributor: contributor, Item: text})
	return string(b)
}

// contribute assigns module a plan whose one item in zsh:normal is text.
func (m *mesh) contribute(node, module, text string) {
	m.t.Helper()
	m.assign(node, module, nodes.Plan{Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}}},
		map[string]string{"item": text})
}

func (m *mesh) collector(node, module string) {
	m.t.Helper()
	m.assign(node, module, nodes.Plan{
		Files:       []nodes.FileSpec{{Path: "/etc/zsh/zshrc", Template: "rc"}},
		Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: "##"}},
	}, map[string]string{"rc": "# managed by mesh\n${shell:zsh:normal}"})
}

// restartingCollector is collector with the file owned and zsh.service
// restarted when it changes, for tests that count the collector's restarts.
func (m *mesh) restartingCollector(node, module string) {
	m.t.Helper()
	m.assign(node, module, nodes.Plan{
		Files:       []nodes.FileSpec{owned("/etc/zsh/zshrc", "rc", "zsh.service")},
		Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: "##"}},
	}, map[string]string{"rc": "# managed by mesh\n${shell:zsh:normal}"})
}

func (m *mesh) revision(bucket, key string) uint64 {
	m.t.Helper()
	e, err := m.kv(bucket).Get(m.t.Context(), key)
	if err != nil {
		m.t.Fatalf("%s %s: %v", bucket, key, err)
	}
	return e.Revision()
}

func (m *mesh) waitGone(bucket, key string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if v, ok := m.get(bucket, key); ok {
			return fmt.Errorf("%s %s is still there: %s", bucket, key, v)
		}
		return nil
	})
}

func (m *mesh) waitValue(bucket, key, want string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if v, _ := m.get(bucket, key); v != want {
			return fmt.Errorf("%s %s is %q, want %q", bucket, key, v, want)
		}
		return nil
	})
}

func TestThreeContributorsAndACollectorMakeTheCollectedFileAndOnlyItMoves(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.beta.editor", "vim")
	m.put(spec.ConfigBucket, "ace.gamma.flag", "on")
	m.contribute("ace", "gamma", "setopt ${config:flag}\n")
	m.contribute("ace", "alpha", "alias ll='ls -l'") // no trailing newline: one is added
	m.assign("ace", "beta", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/beta.conf", Template: "conf"}},
		Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"item": "export EDITOR=${config:editor}\n\n", "conf": "level=${config:level}\n"})
	m.put(spec.ConfigBucket, "ace.beta.level", "1")
	m.collector("ace", "zsh")
	m.client("ace")

	want := "# managed by mesh\n" +
		"## alpha\nalias ll='ls -l'\n" +
		"## beta\nexport EDITOR=vim\n\n" +
		"## gamma\nsetopt on\n"
	m.waitFile("/etc/zsh/zshrc", want)
	m.waitState("ace", "zsh", "applied")
	m.waitValue(spec.CollectBucket, "ace.shell=3Azsh=3Anormal.beta", itemJSON(zshColl, "beta", "export EDITOR=vim\n\n"))
	m.waitValue(spec.CollectBucket, zshKey("ace", "alpha"), itemJSON(zshColl, "alpha", "alias ll='ls -l'"))
	m.waitValue(spec.CollectBucket, zshKey("ace", "gamma"), itemJSON(zshColl, "gamma", "setopt on\n"))

	// beta's other file moves, its item does not: the item is not recorded
	// again and the collector is not filled again.
	rev := m.revision(spec.CollectBucket, zshKey("ace", "beta"))
	from := m.fills.count()
	m.put(spec.ConfigBucket, "ace.beta.level", "2")
	m.waitFile("/etc/beta.conf", "level=2\n")
	m.settle()
	if got := m.fills.since(from); strings.Join(got, ",") != "/etc/beta.conf" {
		t.Fatalf("sent %v, want only /etc/beta.conf", got)
	}
	if r := m.revision(spec.CollectBucket, zshKey("ace", "beta")); r != rev {
		t.Fatalf("an unchanged item was recorded again: revision %d → %d", rev, r)
	}

	// beta's item changes: recorded again, the collector filled again.
	m.put(spec.ConfigBucket, "ace.beta.editor", "nvim")
	want = strings.Replace(want, "EDITOR=vim", "EDITOR=nvim", 1)
	m.waitFile("/etc/zsh/zshrc", want)
	m.waitValue(spec.CollectBucket, zshKey("ace", "beta"), itemJSON(zshColl, "beta", "export EDITOR=nvim\n\n"))

	// A fourth contributor appears: only the collector's file is sent.
	m.settle()
	from = m.fills.count()
	m.contribute("ace", "delta", "path+=(/opt/delta)\n")
	want = strings.Replace(want, "## gamma", "## delta\npath+=(/opt/delta)\n## gamma", 1)
	m.waitFile("/etc/zsh/zshrc", want)
	m.settle()
	if got := m.fills.since(from); strings.Join(got, ",") != "/etc/zsh/zshrc" {
		t.Fatalf("a new contributor sent %v, want only /etc/zsh/zshrc", got)
	}

	// A contributor taken off the node: its item is deleted from the bucket
	// and the collector filled again without it.
	m.del(spec.AssignmentsBucket, "ace.alpha")
	m.waitGone(spec.CollectBucket, zshKey("ace", "alpha"))
	want = strings.Replace(want, "## alpha\nalias ll='ls -l'\n", "", 1)
	m.waitFile("/etc/zsh/zshrc", want)

	// An item taken out of a plan that stays: deleted, and filled again.
	m.assign("ace", "gamma", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/gamma", Template: "f"}}},
		map[string]string{"f": "gamma\n"})
	m.waitGone(spec.CollectBucket, zshKey("ace", "gamma"))
	want = strings.Replace(want, "## gamma\nsetopt on\n", "", 1)
	m.waitFile("/etc/zsh/zshrc", want)

	// The last ones go: the collection is the empty text.
	m.del(spec.AssignmentsBucket, "ace.beta")
	m.del(spec.AssignmentsBucket, "ace.delta")
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n")
}

// SPEC §4.4: `${collected:C}` is every item of C recorded for this node. An
// item recorded whose value then goes waits, and stays recorded in the
// collect bucket: the collected file keeps it, and is not filled again.
// When the item fails it is deleted from the bucket and leaves the file,
// and waiting after that does not bring it back.
func TestAnItemWaitingAfterItWasRecordedStaysInTheCollectedFileUntilItFails(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.beta.editor", "vim")
	m.assign("ace", "beta", nodes.Plan{Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}}},
		map[string]string{"item": "export EDITOR=${config:editor}\n"})
	m.contribute("ace", "alpha", "a\n")
	m.collector("ace", "zsh")
	m.client("ace")
	withBeta := func(editor string) string {
		return "# managed by mesh\n## alpha\na\n## beta\nexport EDITOR=" + editor + "\n"
	}
	const withoutBeta = "# managed by mesh\n## alpha\na\n"
	m.waitFile("/etc/zsh/zshrc", withBeta("vim"))
	m.waitValue(spec.CollectBucket, zshKey("ace", "beta"), itemJSON(zshColl, "beta", "export EDITOR=vim\n"))
	m.waitState("ace", "zsh", "applied")

	// beta waits: its item stays recorded, and in the collected file.
	m.settle()
	from := m.fills.count()
	m.del(spec.ConfigBucket, "ace.beta.editor")
	m.waitWaiting("ace", "beta")
	m.settle()
	if v, ok := m.get(spec.CollectBucket, zshKey("ace", "beta")); !ok || v != itemJSON(zshColl, "beta", "export EDITOR=vim\n") {
		t.Fatalf("beta waits: its recorded item is %q (there: %v)", v, ok)
	}
	if text, _, _ := m.file("/etc/zsh/zshrc"); text != withBeta("vim") {
		t.Fatalf("beta waits, its item recorded, but the collected file is %q", text)
	}
	if got := m.fills.since(from); len(got) != 0 {
		t.Fatalf("an item that began to wait filled %v", got)
	}

	// Its value comes back changed: recorded and filled again.
	m.put(spec.ConfigBucket, "ace.beta.editor", "nvim")
	m.waitFile("/etc/zsh/zshrc", withBeta("nvim"))
	m.waitValue(spec.CollectBucket, zshKey("ace", "beta"), itemJSON(zshColl, "beta", "export EDITOR=nvim\n"))

	// It fails (over the limit of an item): deleted, and out of the file;
	// then it waits: still out of both.
	m.put(spec.ConfigBucket, "ace.beta.editor", strings.Repeat("x", spec.MaxItemBytes))
	m.waitFailed("ace", "beta", "over the limit")
	m.waitGone(spec.CollectBucket, zshKey("ace", "beta"))
	m.waitFile("/etc/zsh/zshrc", withoutBeta)
	m.del(spec.ConfigBucket, "ace.beta.editor")
	m.waitWaiting("ace", "beta")
	m.settle()
	if v, ok := m.get(spec.CollectBucket, zshKey("ace", "beta")); ok {
		t.Fatalf("a failed item that now waits is recorded again: %s", v)
	}
	if text, _, _ := m.file("/etc/zsh/zshrc"); text != withoutBeta {
		t.Fatalf("a failed item that now waits is back in the collected file: %q", text)
	}
}

func TestOnStartItemsOfModulesNoLongerHereAreDeletedAndTheOthersNotRewritten(t *testing.T) {
	m := newMesh(t)
	m.contribute("ace", "alpha", "alias a=b\n")
	m.collector("ace", "zsh")
	// Left by an earlier run: alpha's item as the client writes it, an item
	// of a module gone meanwhile, one alpha no longer contributes, and
	// another node's.
	live := itemJSON(zshColl, "alpha", "alias a=b\n")
	m.put(spec.CollectBucket, zshKey("ace", "alpha"), live)
	m.put(spec.CollectBucket, zshKey("ace", "gone"), itemJSON(zshColl, "gone", "stale\n"))
	m.put(spec.CollectBucket, spec.EncodeKey("ace", "env", "alpha"), itemJSON("env", "alpha", "stale\n"))
	m.put(spec.CollectBucket, zshKey("g14", "gone"), itemJSON(zshColl, "gone", "not ours\n"))
	rev := m.revision(spec.CollectBucket, zshKey("ace", "alpha"))

	m.client("ace")
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n## alpha\nalias a=b\n")
	m.waitGone(spec.CollectBucket, zshKey("ace", "gone"))
	m.waitGone(spec.CollectBucket, spec.EncodeKey("ace", "env", "alpha"))
	m.waitState("ace", "alpha", "applied")
	if _, ok := m.get(spec.CollectBucket, zshKey("g14", "gone")); !ok {
		t.Fatal("another node's item was deleted")
	}
	if r := m.revision(spec.CollectBucket, zshKey("ace", "alpha")); r != rev {
		t.Fatalf("an item unchanged since the last run was written again: revision %d → %d", rev, r)
	}
	if !contains(m.logs.String(), "deleted keys of modules no longer on this node") {
		t.Fatal("the clean-up is not said in the log")
	}
}

func TestItemsAndCollectorsThatBreakTheRulesFailWithAReasonAPersonCanActOn(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "leaky", nodes.Plan{
		Secrets: []nodes.SecretSpec{{Name: "token"}},
		Items:   []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"item": "export TOKEN=${secret:token}\n"})
	m.assign("ace", "gitea", nodes.Plan{
		Provides: []nodes.Offer{{Provision: "gitea-read"}},
		Items:    []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"item": "# ${consumers:gitea-read}\n"})
	m.assign("ace", "greedy", nodes.Plan{
		Files:       []nodes.FileSpec{{Path: "/etc/greedy", Template: "f"}},
		Collections: []nodes.CollectionSpec{{Name: "env", Comment: "#"}},
	}, map[string]string{"f": "${environment:prod}\n"})
	// a's item (in c2) names c1, b's item (in c1) names c2.
	m.assign("ace", "a", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c2", Template: "i"}},
		Collections: []nodes.CollectionSpec{{Name: "c1", Comment: "#"}}}, map[string]string{"i": "${collected:c1}"})
	m.assign("ace", "b", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c1", Template: "i"}},
		Collections: []nodes.CollectionSpec{{Name: "c2", Comment: "#"}}}, map[string]string{"i": "${collected:c2}"})
	m.contribute("ace", "fine", "ok\n")
	m.client("ace")

	for mod, want := range map[string]string{
		"leaky":  "item:1:14: an item names ${secret:token}: an item is kept in a bucket, and no secret is",
		"gitea":  "item:1:3: an item names ${consumers:gitea-read}",
		"greedy": "f:1:1: ${environment:prod} names collection environment:prod which collections[] does not list",
		"a":      "collection cycle: c1 → item a/c2 → c2 → item b/c1 → c1",
		"b":      "collection cycle: c1 → item a/c2 → c2 → item b/c1 → c1",
	} {
		r := m.waitState("ace", mod, "failed")
		if !contains(fmt.Sprint(r["reason"]), want) {
			t.Errorf("%s: reason %q, want it to say %q", mod, r["reason"], want)
		}
	}
	m.waitState("ace", "fine", "applied")
	m.waitValue(spec.CollectBucket, zshKey("ace", "fine"), itemJSON(zshColl, "fine", "ok\n"))
	for _, k := range []string{zshKey("ace", "leaky"), zshKey("ace", "gitea"), spec.EncodeKey("ace", "c1", "b"), spec.EncodeKey("ace", "c2", "a")} {
		if v, ok := m.get(spec.CollectBucket, k); ok {
			t.Errorf("a failed item was recorded: %s = %s", k, v)
		}
	}
}

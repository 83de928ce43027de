package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module that leaves, comes back and leaves again while its request is
// still with the node-engine (a slow or hung fill socket) is said gone
// each time it leaves (SPEC §5.4 r2): a tool runner told it was assigned
// again must hear that it left again.
func TestAModuleLeavingTwiceWhileItsFillIsInFlightIsSaidGoneTwice(t *testing.T) {
	m := newMesh(t)
	hang, reached := hangingFill(t)
	m.webModule()
	// Heard from before the client starts: its start's {"kind":"config"}
	// may reach the bus after its first fill reaches the socket.
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.web")
	m.nc.Flush()
	next := func(want string) {
		t.Helper()
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil || string(msg.Data) != want {
			t.Fatalf("heard %v %v, want %s", msg, err, want)
		}
	}
	m.client("ace", fillSocket(hang))
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("no fill reached the socket")
	}
	next(`{"kind":"config"}`) // the start's (SPEC §5.4)
	m.del(spec.AssignmentsBucket, "ace.web")
	next(`{"gone":true,"kind":"config"}`)
	m.assign("ace", "web", webPlan(), webTemplates)
	next(`{"kind":"config"}`)
	m.del(spec.AssignmentsBucket, "ace.web")
	next(`{"gone":true,"kind":"config"}`)
}

// A module whose plan does not parse, that holds a path at the
// node-engine and contributes an item, across a client restart, while
// another module comes to name its path: the holder keeps the path and
// its item (the collector untouched), the newcomer fails naming it; fixed,
// the holder applies; taken off, the newcomer gets the path and the item
// leaves the collection (SPEC §3, §4.3 r2, §4.4, §4.7).
func TestABrokenHolderAndContributorAcrossARestart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "beta", nodes.Plan{
		Files: []nodes.FileSpec{owned("/etc/beta.conf", "conf", "beta.service")},
		Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"conf": "beta\n", "item": "export B=1\n"})
	m.restartingCollector("ace", "zsh")
	good, _ := m.get(spec.AssignmentsBucket, "ace.beta")
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	const with = "# managed by mesh\n## beta\nexport B=1\n"
	m.waitFile("/etc/zsh/zshrc", with)
	m.waitFile("/etc/beta.conf", "beta\n")
	m.waitState("ace", "beta", "applied")
	m.waitState("ace", "zsh", "applied")
	m.settle()
	key := zshKey("ace", "beta")
	rev := m.revision(spec.CollectBucket, key)

	m.put(spec.AssignmentsBucket, "ace.beta", `{"provisioning":{`)
	m.waitFailed("ace", "beta", "does not parse")
	m.settle()
	stop()
	m.assign("ace", "other", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/beta.conf", "conf", "other.service")}},
		map[string]string{"conf": "other\n"})
	restarts := f.programRestarts()
	m.client("ace", f.socket, sameState)
	m.waitFailed("ace", "other", "beta")
	m.waitFailed("ace", "beta", "does not parse")
	m.waitState("ace", "zsh", "applied")
	m.settle()
	check := func(when string) {
		t.Helper()
		if text, _, _ := m.file("/etc/beta.conf"); text != "beta\n" {
			t.Errorf("%s: /etc/beta.conf is %q", when, text)
		}
		if text, _, _ := m.file("/etc/zsh/zshrc"); text != with {
			t.Errorf("%s: zshrc is %q", when, text)
		}
		if r := m.revision(spec.CollectBucket, key); r != rev {
			t.Errorf("%s: beta's item written again (%d → %d)", when, rev, r)
		}
		if got := f.programRestarts(); strings.Contains(strings.TrimPrefix(got, restarts), "zsh") {
			t.Errorf("%s: programs restarted %q", when, strings.TrimPrefix(got, restarts))
		}
	}
	check("restarted while beta's plan does not parse")

	m.put(spec.AssignmentsBucket, "ace.beta", good)
	m.waitState("ace", "beta", "applied")
	m.settle()
	check("beta fixed")
	m.waitFailed("ace", "other", "beta")

	m.del(spec.AssignmentsBucket, "ace.beta")
	m.waitFile("/etc/beta.conf", "other\n")
	m.waitState("ace", "other", "applied")
	m.waitFile("/etc/zsh/zshrc", "# managed by mesh\n")
	m.waitGone(spec.CollectBucket, key)
}

// A module taken off the node while the client's first fill waits for the
// vault's first answers (firstLooks) is said gone (SPEC §5.4 r2), as one
// taken off before the start or after the first fill is: a tool runner
// told it was assigned before the restart learns it left.
func TestAModuleTakenOffDuringTheFirstLookWaitIsSaidGone(t *testing.T) {
	m := newMesh(t)
	// web names no placeholder: no need of it is left for the start's Sweep to find.
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "plain\n"})
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates) // its archive in the state dir's cache
	v := m.devVault()
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "app", "waiting")
	m.settle()
	stop()

	v.SetSilent(true)
	asks := m.watchVaultAsks()
	changed := m.subjectsData("prov.changed.ace.>")
	d := m.client("ace", sameState, func(c *Config) { c.VaultTimeout = 4 * time.Second })
	bustest.Eventually(t, 10*time.Second, func() error {
		if len(asks.times(ownApp)) == 0 {
			return fmt.Errorf("not asked yet")
		}
		return nil
	})
	if d.ready.Load() {
		t.Fatal("the first fill did not wait for the vault")
	}
	m.del(spec.AssignmentsBucket, "ace.web")
	bustest.Eventually(t, 15*time.Second, func() error {
		if got := changed(); !slices.Contains(got, `prov.changed.ace.web {"gone":true,"kind":"config"}`) {
			return fmt.Errorf("heard %q", got)
		}
		return nil
	})
}

// A module whose new templates archive cannot be read keeps its needs as
// written (ModuleView.NeedsUnknown), across a client restart too; taken off the
// node then, its needs, report and files go all the same (SPEC §4.7).
func TestAModuleTakenOffWhileItsTemplatesAreUnreadLeavesNothing(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.put(spec.ConfigBucket, "ace.mail.host", "mx")
	plan := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}}
	m.assign("ace", "mail", plan, map[string]string{"conf": "host=${config:host}\n"})
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, sameState)
	m.waitFile("/etc/mail.conf", "host=mx\n")
	m.waitState("ace", "mail", "applied")
	key := "ace.mail.config.host"
	m.waitValue(spec.NeedsBucket, key, `{"node":"ace","module":"mail","kind":"config","name":"host","state":"met","why":""}`)

	// A new archive whose file is not there: its templates unread.
	plan.Templates.Ref, plan.Templates.Digest = "file://"+filepath.Join(m.tmpl, "nowhere.tar.gz"), "sha256:"+strings.Repeat("ab", 32)
	b, _ := json.Marshal(map[string]any{"node": "ace", "module": "mail", "provisioning": plan})
	m.put(spec.AssignmentsBucket, "ace.mail", string(b))
	m.waitState("ace", "mail", "waiting")
	m.settle()
	if _, ok := m.get(spec.NeedsBucket, key); !ok {
		t.Fatal("the need was deleted while the templates are unread")
	}
	stop()
	m.client("ace", f.socket, sameState)
	m.waitState("ace", "mail", "waiting")
	m.settle()
	if _, ok := m.get(spec.NeedsBucket, key); !ok {
		t.Fatal("the need was deleted at the restart while the templates are unread")
	}

	m.del(spec.AssignmentsBucket, "ace.mail")
	m.waitGone(spec.NeedsBucket, key)
	m.waitGone(spec.AppliedBucket, "ace.mail")
	bustest.Eventually(t, 10*time.Second, func() error {
		if _, _, err := m.file("/etc/mail.conf"); err == nil {
			return fmt.Errorf("/etc/mail.conf is still there")
		}
		return nil
	})
}

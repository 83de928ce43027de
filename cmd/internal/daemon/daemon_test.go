package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func webPlan() nodes.Plan {
	return nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/web/a.conf", Template: "a", Mode: "0640", OnChange: nodes.OnChange{Action: "restart", Unit: "web.service"}},
			{Path: "/etc/web/b.conf", Template: "b"},
			{Path: "/etc/web/c.conf", Template: "c"},
		},
		Placement: map[string]map[string]string{"port": {"http": "8080"}, "dir": {"state": "/var/lib/web"}},
	}
}

var webTemplates = map[string]string{
	"a": "model = ${config:model}\nport = ${port:http}\n",
	"b": "state = ${dir:state}\n",
	"c": "flavour = ${config:flavour}\n",
}

// webModule assigns node ace the web module (webPlan, webTemplates) with
// both its config values written.
func (m *mesh) webModule() {
	m.t.Helper()
	m.put(spec.ConfigBucket, "ace.web.model", "opus")
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	m.assign("ace", "web", webPlan(), webTemplates)
}

func TestAPlanAndItsValuesBecomeFilesAndAnAppliedReport(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	if _, mode, _ := m.file("/etc/web/a.conf"); mode != 0o640 {
		t.Fatalf("mode %v", mode)
	}
	r := m.waitState("ace", "web", "applied")
	files := r["files"].([]any)
	if len(files) != 3 || !strings.HasPrefix(files[0].(map[string]any)["digest"].(string), "sha256:") {
		t.Fatalf("report files %v", files)
	}
	need, ok := m.get(spec.NeedsBucket, "ace.web.config.model")
	if !ok || !contains(need, `"state":"met"`) {
		t.Fatalf("need %q", need)
	}
}

func TestOneConfigChangeSendsExactlyTheFileThatNamesIt(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	from := m.fills.count()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	m.settle()
	if got := m.fills.since(from); len(got) != 1 || got[0] != "/etc/web/c.conf" {
		t.Fatalf("sent %v, want only /etc/web/c.conf", got)
	}
}

// A value that changes moves no need (it stays met): no need is put
// again. One deleted then moves its need to waiting, and that is written,
// however many flushes found nothing to write before it.
func TestAChangeThatMovesNoNeedWritesNoNeed(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	revisions := func() map[string]uint64 {
		out := map[string]uint64{}
		keys, err := m.kv(spec.NeedsBucket).ListKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for k := range keys.Keys() {
			e, err := m.kv(spec.NeedsBucket).Get(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			out[k] = e.Revision()
		}
		return out
	}
	m.settle() // the needs are written after the report
	before := revisions()
	if len(before) < 3 {
		t.Fatalf("needs %v", before)
	}
	for _, v := range []string{"mint", "lemon", "vanilla"} {
		m.put(spec.ConfigBucket, "ace.web.flavour", v)
		m.waitFile("/etc/web/c.conf", "flavour = "+v+"\n")
	}
	m.settle()
	if after := revisions(); !maps.Equal(after, before) {
		t.Fatalf("needs put again by changes that moved none: %v, then %v", before, after)
	}
	m.del(spec.ConfigBucket, "ace.web.flavour")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if need, _ := m.get(spec.NeedsBucket, "ace.web.config.flavour"); !contains(need, `"state":"waiting"`) {
			return fmt.Errorf("need %s", need)
		}
		return nil
	})
}

func TestAModuleMissingAConfigKeyWritesNothingAndSaysWhatItWaitsFor(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.web.model", "opus")
	m.assign("ace", "web", webPlan(), webTemplates)
	m.client("ace")
	var b []byte
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "web")
		b, _ = json.Marshal(r["waiting"])
		if r["state"] != "waiting" || !contains(string(b), `"kind":"config"`) {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	if !contains(string(b), `"kind":"config"`) || !contains(string(b), `"name":"flavour"`) || !contains(string(b), "ace.web.flavour: not written yet") {
		t.Fatalf("waiting %s", b)
	}
	if _, _, err := m.file("/etc/web/a.conf"); err == nil {
		t.Fatal("a file of a waiting module was written")
	}
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	m.waitState("ace", "web", "applied")
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
}

func TestABrokenPlanFailsItsModuleAndAnotherIsAppliedNormally(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.AssignmentsBucket, "ace.broken", `{"node":"ace","module":"broken","provisioning":{"files":42}}`)
	p := nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/x", Template: "x"}}}
	ref, _ := m.archive("mismatch", map[string]string{"x": "x"})
	p.Templates.Ref, p.Templates.Digest = ref, "sha256:"+strings.Repeat("0", 64)
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "mismatch", Provisioning: p})
	m.put(spec.AssignmentsBucket, "ace.mismatch", string(b))
	m.assign("ace", "slip", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/slip", Template: "x"}}}, map[string]string{"x": "x", "../evil": "boom"})
	m.client("ace")
	m.waitState("ace", "web", "applied")
	for mod, why := range map[string]string{"broken": "files", "mismatch": "digest mismatch", "slip": "../evil"} {
		r := m.waitState("ace", mod, "failed")
		if !contains(fmt.Sprint(r["reason"]), why) {
			t.Fatalf("%s: reason %q does not name %q", mod, r["reason"], why)
		}
	}
}

func TestAModuleTakenOffTheNodeLeavesNoNeedsAndSaysRemoved(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	events, _ := m.nc.SubscribeSync("prov.applied.ace.web")
	m.del(spec.AssignmentsBucket, "ace.web")
	// A report of the module still at work (a refill's) may come first.
	for deadline := time.Now().Add(5 * time.Second); ; {
		msg, err := events.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no removed event: %v", err)
		}
		if contains(string(msg.Data), `"state":"removed"`) {
			break
		}
	}
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if _, ok := m.report("ace", "web"); ok {
			return fmt.Errorf("applied key still there")
		}
		if _, ok := m.get(spec.NeedsBucket, "ace.web.config.model"); ok {
			return fmt.Errorf("need still there")
		}
		return nil
	})
}

func TestAnOwnedFileEditedOnDiskIsPutBackAtTheRefill(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace", func(c *Config) { c.Refill = 300 * time.Millisecond })
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	m.waitState("ace", "web", "applied")
	rev := func() uint64 {
		e, _ := m.kv(spec.AppliedBucket).Get(t.Context(), "ace.web")
		return e.Revision()
	}
	r0 := rev()
	if err := writeFile(m.root+"/etc/web/b.conf", "tampered\n"); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	time.Sleep(700 * time.Millisecond) // more refill ticks that change nothing
	if r1 := rev(); r1 > r0+1 {
		t.Fatalf("report rewritten on ticks that changed nothing: revision %d → %d", r0, r1)
	}
}

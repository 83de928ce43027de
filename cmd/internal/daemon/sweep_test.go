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
)

// goneModule assigns ace a module with one need (config k) and one item.
func (m *mesh) goneModule() {
	m.t.Helper()
	m.put(spec.ConfigBucket, "ace.gone.k", "v")
	m.assign("ace", "gone", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/gone.conf", Template: "f"}},
		Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}},
	}, map[string]string{"f": "k = ${config:k}\n", "item": "alias g=gone"})
}

// What the client wrote of a module that left, and the need of a
// placeholder dropped, while it was stopped are deleted once it starts
// (SPEC §4.7 r2), a removed report published for the module gone and the
// node-engine told to remove its files.
func TestKeysOfAModuleThatLeftWhileTheClientWasDownAreDeletedAtStart(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.goneModule()
	f := m.stateFill()
	_, stop := m.startClient("ace", f.socket)
	m.waitState("ace", "gone", "applied")
	m.waitState("ace", "web", "applied")
	m.waitFile("/etc/gone.conf", "k = v\n")
	item := spec.EncodeKey("ace", zshColl, "gone")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		for _, k := range []struct{ bucket, key string }{
			{spec.NeedsBucket, "ace.gone.config.k"}, {spec.NeedsBucket, "ace.web.config.flavour"}, {spec.CollectBucket, item},
		} {
			if _, ok := m.get(k.bucket, k.key); !ok {
				return fmt.Errorf("%s %s not written", k.bucket, k.key)
			}
		}
		return nil
	})
	stop()

	m.del(spec.AssignmentsBucket, "ace.gone")
	tmpl := map[string]string{"a": webTemplates["a"], "b": webTemplates["b"], "c": "no flavour any more\n"}
	m.assign("ace", "web", webPlan(), tmpl)
	events, _ := m.nc.SubscribeSync("prov.applied.ace.gone")
	m.nc.Flush()
	m.client("ace", f.socket)
	m.waitFile("/etc/web/c.conf", "no flavour any more\n")
	m.waitGone(spec.AppliedBucket, "ace.gone")
	m.waitGone(spec.NeedsBucket, "ace.gone.config.k")
	m.waitGone(spec.CollectBucket, item)
	m.waitGone(spec.NeedsBucket, "ace.web.config.flavour")
	bustest.Eventually(m.t, 10*time.Second, func() error { // the node-engine was told, and removed the module's file
		if _, _, err := m.file("/etc/gone.conf"); err == nil {
			return fmt.Errorf("/etc/gone.conf is still there")
		}
		return nil
	})
	if _, ok := m.get(spec.NeedsBucket, "ace.web.config.model"); !ok {
		t.Fatal("a need the module still has was deleted")
	}
	msg, err := events.NextMsg(5 * time.Second)
	var r struct{ State string }
	if err != nil || json.Unmarshal(msg.Data, &r) != nil || r.State != "removed" {
		t.Fatalf("event %v %v, want gone removed", msg, err)
	}
}

// A delete the bus refuses (the applied bucket's stream takes no subject
// of this node for a while) is tried again at each tick until it holds.
func TestAStaleKeyTheBusRefusesToDeleteIsDeletedOnceItCan(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.AppliedBucket, "ace.gone", `{"node":"ace","module":"gone","state":"applied"}`)
	stream := "KV_" + spec.AppliedBucket
	si, err := m.js.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := si.CachedInfo().Config
	broken := cfg
	broken.Subjects = []string{"$KV." + spec.AppliedBucket + ".elsewhere.>"}
	if _, err := m.js.UpdateStream(t.Context(), broken); err != nil {
		t.Fatal(err)
	}
	events, _ := m.nc.SubscribeSync("prov.applied.ace.gone")
	m.nc.Flush()
	m.client("ace")
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if n := strings.Count(m.logs.String(), "not all deleted yet"); n < 2 {
			return fmt.Errorf("the sweep failed %d times", n)
		}
		return nil
	})
	if _, err := m.kv(spec.AppliedBucket).Get(t.Context(), "ace.gone"); err != nil {
		t.Fatalf("the stale key went while the bus refused it: %v", err)
	}
	if _, err := m.js.UpdateStream(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	m.waitGone(spec.AppliedBucket, "ace.gone")
	m.waitState("ace", "web", "applied")
	if msg, err := events.NextMsg(5 * time.Second); err != nil || !strings.Contains(string(msg.Data), `"state":"removed"`) {
		t.Fatalf("event %v %v, want gone removed", msg, err)
	}
}

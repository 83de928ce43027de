package nodes

import (
	"reflect"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// webMesh is node ace with module web, whose one file reads ${config:model}.
func webMesh(t *testing.T) *NodeGraph {
	t.Helper()
	m := NewNodeGraph("ace")
	registryAll(m)
	if c := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{Files: []FileSpec{{Path: "/etc/web", Template: "t"}}})); !reflect.DeepEqual(c, Change{Added: "web", Assigned: "web"}) {
		t.Fatalf("putting a good plan: %+v, want web added", c)
	}
	if c := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{Files: []FileSpec{{Path: "/etc/web", Template: "t"}}})); !reflect.DeepEqual(c, Change{Assigned: "web"}) {
		t.Fatalf("putting the plan again: %+v, want web assigned (written again) alone", c)
	}
	m.SetArchive("web", digestA, map[string][]byte{"t": []byte("model=${config:model}\n")})
	return m
}

func TestPutOfAConfigValueSaysWhichModuleAndKeyMoved(t *testing.T) {
	m := webMesh(t)
	want := Change{ConfigModule: "web", ConfigKey: "model"}
	if c := m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus")); !reflect.DeepEqual(c, want) {
		t.Fatalf("first value: %+v, want %+v", c, want)
	}
	if c := m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus")); !reflect.DeepEqual(c, Change{}) {
		t.Fatalf("the same value again: %+v, want nothing", c)
	}
	if c := m.Put(spec.ConfigBucket, "ace.web.model", []byte("haiku")); !reflect.DeepEqual(c, want) {
		t.Fatalf("a new value: %+v, want %+v", c, want)
	}
	m.Stabilize()
	if f := file(m, "web", "/etc/web"); f.Value == nil || string(f.Value.mustBytes()) != "model=haiku\n" {
		t.Fatalf("file = %+v", f)
	}
	if c := m.Put(spec.ConfigBucket, "ace.other.model", []byte("x")); !reflect.DeepEqual(c, Change{}) {
		t.Fatalf("a value of a module not here: %+v, want nothing", c)
	}
	if c := m.Delete(spec.ConfigBucket, "ace.web.model"); !reflect.DeepEqual(c, want) {
		t.Fatalf("delete: %+v, want %+v", c, want)
	}
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, "ace.web.model: not written yet") {
		t.Fatalf("after delete: %v %q", v.State, v.Reason)
	}
}

func TestPutRefusesKeysOutOfShapeAndAnotherNodesConfig(t *testing.T) {
	m := webMesh(t)
	for _, c := range []struct{ bucket, key string }{
		{spec.AssignmentsBucket, "ace.web.extra"},
		{spec.AssignmentsBucket, "ace.w=zz"},
		{spec.RegistryBucket, "con fig"},
		{spec.ConfigBucket, "ace.web"},
		{"gitea_bound", "ace.web"},
		{"gitea_bound", "ace.web.a.b.c"},
	} {
		if ch := m.Put(c.bucket, c.key, []byte("{}")); ch.OutOfShape == nil || ch.Foreign {
			t.Errorf("%s %s: %+v, want out of shape", c.bucket, c.key, ch)
		}
	}
	if got := m.Modules(); len(got) != 1 {
		t.Errorf("modules %v after keys out of shape", got)
	}
	if ch := m.Put(spec.ConfigBucket, "zed.web.model", []byte("x")); !ch.Foreign || ch.OutOfShape != nil {
		t.Errorf("another node's config: %+v, want foreign", ch)
	}
	if _, ok := m.ConfigValue("web", "model"); ok {
		t.Error("another node's config value was recorded")
	}
	if ch := m.Delete(spec.AssignmentsBucket, "ace"); ch.OutOfShape == nil {
		t.Errorf("deleting an assignment key out of shape: %+v", ch)
	}
	if ch := m.Put(spec.AssignmentsBucket, "ace.bad", []byte(`{"provisioning":{"files":"nope"}}`)); ch.Refused == nil || ch.OutOfShape != nil {
		t.Errorf("a broken plan: %+v, want refused", ch)
	}
}

func TestDeleteOfAnAssignmentSaysWhichModuleWasRemoved(t *testing.T) {
	m := webMesh(t)
	m.Put(spec.AssignmentsBucket, "zed.web", planJSON("zed", "web", Plan{}))
	if c := m.Delete(spec.AssignmentsBucket, "zed.web"); !reflect.DeepEqual(c, Change{}) {
		t.Fatalf("another node's module: %+v, want nothing", c)
	}
	if c := m.Delete(spec.AssignmentsBucket, "ace.web"); !reflect.DeepEqual(c, Change{Removed: "web"}) {
		t.Fatalf("this node's: %+v, want web removed", c)
	}
	if m.HasModule("web") {
		t.Fatal("web still here")
	}
	if c := m.Delete(spec.AssignmentsBucket, "ace.web"); !reflect.DeepEqual(c, Change{}) {
		t.Fatalf("deleted twice: %+v, want nothing", c)
	}
}

func TestBucketMissingMakesItsLeavesSaySo(t *testing.T) {
	m := webMesh(t)
	m.BucketMissing(spec.ConfigBucket, true)
	m.Stabilize()
	if v := m.View("web"); !strings.Contains(v.Reason, "bucket "+spec.ConfigBucket+" does not exist yet") {
		t.Fatalf("config missing: %v %q", v.State, v.Reason)
	}
	m.BucketMissing(spec.ConfigBucket, false)
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus"))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("config back: %v %q", v.State, v.Reason)
	}

	m.Put(spec.AssignmentsBucket, "zed.gitea", planJSON("zed", "gitea", Plan{Provides: []Offer{{Provision: "repo"}}}))
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", Plan{Files: []FileSpec{{Path: "/etc/app", Template: "t"}},
		Provisions: []ProvisionSpec{{Provider: "gitea", Provision: "repo", Credential: "token"}}}))
	m.SetArchive("app", digestA, map[string][]byte{"t": []byte("${bound:repo:url}")})
	m.BucketMissing(spec.RegistryBucket, true)
	m.BucketMissing("gitea_bound", true)
	m.Stabilize()
	if v := m.View("app"); !strings.Contains(v.Reason, "does not exist yet") {
		t.Fatalf("registry and bound bucket missing: %v %q", v.State, v.Reason)
	}
	m.BucketMissing(spec.RegistryBucket, false)
	m.Stabilize()
	if v := m.View("app"); !strings.Contains(v.Reason, "bucket gitea_bound does not exist yet") {
		t.Fatalf("bound bucket missing: %v %q", v.State, v.Reason)
	}
	if c := m.Put("gitea_bound", "ace.app.repo", []byte(`{"state":"bound","values":{"url":"u"}}`)); !reflect.DeepEqual(c, Change{}) {
		t.Fatalf("a binding: %+v", c)
	}
	m.BucketMissing("gitea_bound", false)
	m.Stabilize()
	if f := file(m, "app", "/etc/app"); f.Value == nil || string(f.Value.mustBytes()) != "u" {
		t.Fatalf("app: %+v %v %q", f, m.View("app").State, m.View("app").Reason)
	}
}

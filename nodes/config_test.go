package nodes

import (
	"regexp"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A config need is the leaf itself (config.go): it waits for the registry
// while the registry does not answer for kind config, holds the value once
// it does, and keeps the value known (answered, rendered again) across the
// registry going and coming back; explain's Behind names what it waits for.
func TestAConfigNeedWaitsForTheRegistryAndKeepsItsValueAcrossIt(t *testing.T) {
	m := NewNodeGraph("ace")
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus"))
	if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files: []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}},
	})).Refused; err != nil {
		t.Fatal(err)
	}
	m.SetArchive("web", digestA, map[string][]byte{"web.conf": []byte("model=${config:model}\n")})
	m.Stabilize()
	need := m.Graph().Node(configNeedKey("web", "model"))
	behind := func(want graph.Key) {
		t.Helper()
		if k, o, ok := m.Behind(need); !ok || k != want || o == nil || o.Key != want.Name {
			t.Fatalf("Behind = %v %+v %v, want %v", k, o, ok, want)
		}
	}
	waits := func(why string) {
		t.Helper()
		f := file(m, "web", "/etc/web.conf")
		if f.State != graph.Waiting || !strings.Contains(f.Why, why) {
			t.Fatalf("web.conf %+v, want waiting for %q", f, why)
		}
		if v, ok := m.ConfigValue("web", "model"); !ok || string(v) != "opus" {
			t.Fatalf("ConfigValue while waiting = %q, %v", v, ok)
		}
	}
	rendered := func() {
		t.Helper()
		if f := file(m, "web", "/etc/web.conf"); f.Value == nil || string(f.Value.mustBytes()) != "model=opus\n" {
			t.Fatalf("web.conf %+v", f)
		}
	}
	waits("does not name kind config")
	behind(graph.Key{Kind: KindRegistry, Name: "config"})
	if nv := m.Needs("web"); len(nv) != 1 || nv[0].Kind != "config" || nv[0].Name != "model" || nv[0].State != graph.Waiting {
		t.Fatalf("needs %+v", nv)
	}

	registryAll(m)
	m.Stabilize()
	rendered()
	behind(graph.Key{Kind: KindConfig, Name: "ace.web.model"})

	m.Delete(spec.RegistryBucket, "config")
	m.Stabilize()
	waits("does not name kind config")
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config","bucket":"elsewhere"}`))
	m.Stabilize()
	waits("lives in bucket elsewhere")
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config"}`))
	m.Stabilize()
	rendered()

	m.BucketNotPermitted(spec.ConfigBucket, true) // a value known stays
	m.Stabilize()
	rendered()
	m.Delete(spec.ConfigBucket, "ace.web.model")
	m.Stabilize()
	f := file(m, "web", "/etc/web.conf")
	if f.State != graph.Waiting || !strings.Contains(f.Why, NotPermittedWhy(spec.ConfigBucket)) {
		t.Fatalf("web.conf %+v", f)
	}
	m.BucketNotPermitted(spec.ConfigBucket, false)
	m.Stabilize()
	if f := file(m, "web", "/etc/web.conf"); !strings.Contains(f.Why, "mesh-config_resolved ace.web.model: not written yet") {
		t.Fatalf("web.conf %+v", f)
	}
	dot, _, err := m.DOT("g", "web")
	if err != nil || !strings.Contains(string(dot), `"config:ace.web.model" -> "need:web/${config:model}"`) {
		t.Fatalf("DOT %v:\n%s", err, dot)
	}
	// The registry's entry for kind config, which the need reads too (it
	// waited on it above), is drawn feeding it, met (an outside audit: the
	// picture left it out while it answered).
	if !strings.Contains(string(dot), `"registry:config" -> "need:web/${config:model}"`) ||
		!regexp.MustCompile(`"registry:config" \[[^]]*state=ready`).Match(dot) {
		t.Fatalf("DOT does not draw the registry's entry feeding the config need, met:\n%s", dot)
	}
}

package nodes

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func planJSON(node, mod string, p Plan) []byte {
	if p.Templates.Ref == "" {
		p.Templates = TemplatesRef{Ref: "file:///t/" + mod + ".tar", Digest: digestA}
	}
	b, _ := json.Marshal(Assignment{Node: node, Module: mod, Provisioning: p})
	return b
}

func registryAll(m *NodeGraph) {
	for _, r := range spec.Kinds() {
		m.Put(spec.RegistryBucket, string(r.Kind), []byte(`{"kind":"`+string(r.Kind)+`"}`))
	}
}

func file(m *NodeGraph, mod, path string) FileView {
	for _, f := range m.View(mod).Files {
		if f.Path == path {
			return f
		}
	}
	return FileView{}
}

func TestAPlanWithItsValuesRendersItsFiles(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
		Files:     []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}, {Path: "/etc/other", Template: "other"}},
		Placement: map[string]map[string]string{"port": {"http": "8080"}},
	})).Refused; err != nil {
		t.Fatal(err)
	}
	if w := m.TakeNewArchives(); len(w) != 1 || w[0].Module != "web" {
		t.Fatalf("archives wanted %v", w)
	}
	m.SetArchive("web", digestA, map[string][]byte{
		"web.conf": []byte("port=${port:http} model=${config:model}\n"),
		"other":    []byte("static $${literal}\n"),
	})
	m.Stabilize()
	v := m.View("web")
	if v.State != graph.Waiting || !strings.Contains(v.Reason, "mesh-config_resolved ace.web.model: not written yet") {
		t.Fatalf("state %v reason %q", v.State, v.Reason)
	}
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("${secret:x}"))
	if got := m.Stabilize(); len(got) != 1 || got[0] != "web" {
		t.Fatalf("touched %v", got)
	}
	f := file(m, "web", "/etc/web.conf")
	if string(f.Value.mustBytes()) != "port=8080 model=${secret:x}\n" || f.Value.Spec.Mode != "0644" {
		t.Fatalf("content %q mode %s", f.Value.mustBytes(), f.Value.Spec.Mode)
	}
	if got := string(file(m, "web", "/etc/other").Value.mustBytes()); got != "static ${literal}\n" {
		t.Fatalf("other %q", got)
	}
	if len(m.TakeNewSecrets()) != 0 {
		t.Fatal("a config value holding ${secret:x} asked the vault")
	}
}

func TestABrokenPlanFailsThatModuleAlone(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.good", planJSON("ace", "good", Plan{Files: []FileSpec{{Path: "/etc/good", Template: "g"}}}))
	m.SetArchive("good", digestA, map[string][]byte{"g": []byte("fine\n")})
	err := m.Put(spec.AssignmentsBucket, "ace.bad", []byte(`{"node":"ace","module":"bad","provisioning":{"files":"nope"}}`)).Refused
	if err == nil {
		t.Fatal("no error for a broken plan")
	}
	m.Stabilize()
	if v := m.View("bad"); v.State != graph.Failed || !strings.Contains(v.Reason, "files") {
		t.Fatalf("bad %v %q", v.State, v.Reason)
	}
	if v := m.View("good"); v.State != graph.Ready {
		t.Fatalf("good %v %q", v.State, v.Reason)
	}
}

// A consumer's plan refused for a reason that is not its binding (a bad
// mode) binds it all the same, on this node as on any other: whether a
// consumer is listed does not hang on where its plan is.
func TestARefusedPlanBindsItsConsumerOnAnyNode(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	bad := func(node string) []byte {
		return planJSON(node, "cc", Plan{
			Files:      []FileSpec{{Path: "/etc/cc/x", Template: "x", Mode: "bogus"}},
			Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}})
	}
	m.Put(spec.AssignmentsBucket, "ace.cc", bad("ace"))
	m.Put(spec.AssignmentsBucket, "g14.cc", bad("g14"))
	wanted := m.TakeNewSecrets()
	slices.Sort(wanted)
	if want := []string{"pair/gitea/gitea-read/ace/cc", "pair/gitea/gitea-read/g14/cc"}; !slices.Equal(wanted, want) {
		t.Fatalf("asked for %v, want %v", wanted, want)
	}
	m.Stabilize()
	if v := m.View("cc"); v == nil || v.State != graph.Failed {
		t.Fatalf("the refused plan's module: %+v", v)
	}
}

func TestConsumersListsTheBoundConsumersWhoseCredentialIsThere(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	consumer := func(node string) []byte {
		return planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}})
	}
	m.Put(spec.AssignmentsBucket, "g14.cc", consumer("g14"))
	m.Put(spec.AssignmentsBucket, "ace.cc", consumer("ace"))
	m.Put(spec.AssignmentsBucket, "zed.cc", consumer("zed"))
	wanted := m.TakeNewSecrets()
	if len(wanted) != 3 {
		t.Fatalf("wanted %v", wanted)
	}
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("s-ace"), time.Time{})
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"), time.Time{})
	m.SecretAbsent("pair/gitea/gitea-read/zed/cc", "absent", time.Now())
	m.Stabilize()
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	var list []map[string]string
	if err := json.Unmarshal(f.Value.mustBytes(), &list); err != nil || len(list) != 2 || list[0]["consumer"] != "ace" || list[1]["value"] != "s-g14" || f.Value.Spec.Mode != "0600" {
		t.Fatalf("consumers %s %v mode %s", f.Value.mustBytes(), err, f.Value.Spec.Mode)
	}
	m.Put(spec.AssignmentsBucket, "h.cc", consumer("h"))
	if w := m.TakeNewSecrets(); len(w) != 1 || w[0] != "pair/gitea/gitea-read/h/cc" {
		t.Fatalf("one binding asks %v", w)
	}
	m.Delete(spec.AssignmentsBucket, "g14.cc")
	m.Stabilize()
	if m.WantsSecret("pair/gitea/gitea-read/g14/cc") {
		t.Fatal("an unbound consumer's credential is still held")
	}
}

func TestAKindWaitsWhileTheRegistrySaysItLivesElsewhere(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config","owner":"mesh-config","bucket":"other-config","key":"<node>.<module>.<key>"}`))
	m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{Files: []FileSpec{{Path: "/etc/web", Template: "t"}}}))
	m.SetArchive("web", digestA, map[string][]byte{"t": []byte("${config:model}")})
	m.Put(spec.ConfigBucket, "ace.web.model", []byte("opus"))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, "lives in bucket other-config; this client reads it from mesh-config_resolved") {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
	// An entry that is not an object (null parsed as one with no fields).
	m.Put(spec.RegistryBucket, "config", []byte(`null`))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Waiting || !strings.Contains(v.Reason, "the registry's entry for kind config is not a JSON object") {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
	m.Put(spec.RegistryBucket, "config", []byte(`{"kind":"config","owner":"mesh-config","bucket":"mesh-config_resolved","key":"<node>.<module>.<key>"}`))
	m.Stabilize()
	if v := m.View("web"); v.State != graph.Ready {
		t.Fatalf("%v %q", v.State, v.Reason)
	}
}

// A plan moving to a new templates archive rebuilds its files; a secret
// the module already holds is not asked again (asked once per run), and
// its value is dropped when the module goes.
func TestASecretIsAskedOncePerRunAcrossANewTemplatesArchive(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	p := Plan{Files: []FileSpec{{Path: "/etc/k", Template: "t"}}, Secrets: []SecretSpec{{Name: "key"}}}
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", p))
	m.SetArchive("app", digestA, map[string][]byte{"t": []byte("k=${secret:key}")})
	if got := m.TakeNewSecrets(); len(got) != 1 || got[0] != "own/app/key" {
		t.Fatalf("asked %v", got)
	}
	m.SetSecret("own/app/key", []byte("s1"), time.Time{})
	m.Stabilize()
	digestB := "sha256:" + strings.Repeat("b", 64)
	p.Templates = TemplatesRef{Ref: "file:///t/app-2.tar", Digest: digestB}
	m.Put(spec.AssignmentsBucket, "ace.app", planJSON("ace", "app", p))
	m.Stabilize() // the new archive is not here yet: the file waits on it alone
	m.SetArchive("app", digestB, map[string][]byte{"t": []byte("key=${secret:key}")})
	m.Stabilize()
	if got := m.TakeNewSecrets(); len(got) != 0 {
		t.Fatalf("asked again %v", got)
	}
	if f := file(m, "app", "/etc/k"); f.Value == nil || string(f.Value.mustBytes()) != "key=s1" {
		t.Fatalf("file %+v", f)
	}
	m.Delete(spec.AssignmentsBucket, "ace.app")
	if _, held := m.secrets["own/app/key"]; held {
		t.Fatal("a removed module's secret is still held")
	}
}

// A config value is held by its need leaf while a placeholder reads it and
// by the graph's map otherwise (config.go): across a leaf made, removed and
// made again, the value is answered (ConfigValue, the ask), a change of it
// is a change, and a file that reads it again renders it.
func TestAConfigValueOutlivesTheLeafThatHeldIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("A1"))
	m.Put(spec.ConfigBucket, "ace.web.b", []byte("B1"))
	put := func(tmpl, text string) {
		t.Helper()
		if err := m.Put(spec.AssignmentsBucket, "ace.web", planJSON("ace", "web", Plan{
			Files: []FileSpec{{Path: "/etc/web.conf", Template: tmpl}},
		})).Refused; err != nil {
			t.Fatal(err)
		}
		m.SetArchive("web", digestA, map[string][]byte{tmpl: []byte(text)})
		m.Stabilize()
	}
	value := func(key, want string) {
		t.Helper()
		if v, ok := m.ConfigValue("web", key); !ok || string(v) != want {
			t.Fatalf("ConfigValue(web, %s) = %q, %v; want %q", key, v, ok, want)
		}
	}
	content := func(want string) {
		t.Helper()
		if f := file(m, "web", "/etc/web.conf"); f.Value == nil || string(f.Value.mustBytes()) != want {
			t.Fatalf("web.conf %+v, want %q", f, want)
		}
	}
	put("reads-a", "a=${config:a}\n")
	content("a=A1\n")
	value("a", "A1")
	value("b", "B1")
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A1")); c.ConfigKey != "" {
		t.Fatalf("the same value again is a change: %+v", c)
	}
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A2")); c.ConfigKey != "a" {
		t.Fatalf("a new value of a leaf's key is no change: %+v", c)
	}
	m.Stabilize()
	content("a=A2\n")

	put("none", "nothing\n") // the leaf of a goes; its value stays known
	if m.Graph().Node(configNeedKey("web", "a")) != nil {
		t.Fatal("the need of a is still in the graph")
	}
	value("a", "A2")
	if c := m.Put(spec.ConfigBucket, "ace.web.a", []byte("A2")); c.ConfigKey != "" {
		t.Fatalf("the same value again, after its leaf went, is a change: %+v", c)
	}
	m.Put(spec.ConfigBucket, "ace.web.a", []byte("A3"))
	put("reads-a-again", "a=${config:a}\n")
	content("a=A3\n")
	value("a", "A3")

	m.Delete(spec.ConfigBucket, "ace.web.a")
	m.Stabilize()
	if _, ok := m.ConfigValue("web", "a"); ok {
		t.Fatal("a deleted key is still answered")
	}
	if f := file(m, "web", "/etc/web.conf"); f.State != graph.Waiting || !strings.Contains(f.Why, "ace.web.a: not written yet") {
		t.Fatalf("web.conf after the delete: %+v", f)
	}
}

// mustBytes is the file's bytes (rendered again when its value has let
// them go); it panics when they cannot be had.
func (f *FileValue) mustBytes() []byte {
	b, err := f.Bytes()
	if err != nil {
		panic(err)
	}
	return b
}

// A secret written to its own path is a file, bounded as a rendered one
// (SPEC §4.1: 16 MiB): one over it fails the module naming the limit and
// the length, never the value; one at it is written.
func TestASecretFileOverTheFileLimitFailsNamingIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.pm", planJSON("ace", "pm", Plan{Secrets: []SecretSpec{{Name: "k", Path: "/etc/pm/k"}}}))
	m.TakeNewSecrets()
	m.SetSecret("own/pm/k", bytes.Repeat([]byte("S"), spec.MaxRenderedBytes+1), time.Time{})
	m.Stabilize()
	v := m.View("pm")
	if v.State != graph.Failed || !strings.Contains(v.Reason, "MaxRenderedBytes") || !strings.Contains(v.Reason, "/etc/pm/k") ||
		strings.Contains(v.Reason, "SSSS") {
		t.Fatalf("a secret file of %d bytes: %v %q", spec.MaxRenderedBytes+1, v.State, v.Reason)
	}
	m.SetSecret("own/pm/k", bytes.Repeat([]byte("S"), spec.MaxRenderedBytes), time.Time{})
	m.Stabilize()
	if f := file(m, "pm", "/etc/pm/k"); f.Value == nil || len(f.Value.mustBytes()) != spec.MaxRenderedBytes {
		t.Fatalf("a secret file of exactly %d bytes: %+v", spec.MaxRenderedBytes, m.View("pm").State)
	}
}

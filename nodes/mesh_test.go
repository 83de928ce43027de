package nodes

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
)

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func planJSON(node, mod string, p Plan) []byte {
	if p.Templates.Ref == "" {
		p.Templates = TemplatesRef{Ref: "file:///t/" + mod + ".tar", Digest: digestA}
	}
	b, _ := json.Marshal(Assignment{Node: node, Module: mod, Provisioning: p})
	return b
}

func registryAll(m *Mesh) {
	for k := range FilledKinds {
		m.PutRegistry(k, []byte(`{"kind":"`+k+`"}`))
	}
}

func file(m *Mesh, mod, path string) FileView {
	for _, f := range m.View(mod).Files {
		if f.Path == path {
			return f
		}
	}
	return FileView{}
}

func TestAPlanWithItsValuesRendersItsFiles(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	if err := m.PutAssignment("ace.web", planJSON("ace", "web", Plan{
		Files:     []FileSpec{{Path: "/etc/web.conf", Template: "web.conf"}, {Path: "/etc/other", Template: "other"}},
		Placement: map[string]map[string]string{"port": {"http": "8080"}},
	})); err != nil {
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
	m.PutConfig("ace.web.model", []byte("${secret:x}"))
	if got := m.Stabilize(); len(got) != 1 || got[0] != "web" {
		t.Fatalf("touched %v", got)
	}
	f := file(m, "web", "/etc/web.conf")
	if string(f.Value.Content) != "port=8080 model=${secret:x}\n" || f.Value.Spec.Mode != "0644" {
		t.Fatalf("content %q mode %s", f.Value.Content, f.Value.Spec.Mode)
	}
	if got := string(file(m, "web", "/etc/other").Value.Content); got != "static ${literal}\n" {
		t.Fatalf("other %q", got)
	}
	if len(m.TakeNewSecrets()) != 0 {
		t.Fatal("a config value holding ${secret:x} asked the vault")
	}
}

func TestABrokenPlanFailsThatModuleAlone(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	m.PutAssignment("ace.good", planJSON("ace", "good", Plan{Files: []FileSpec{{Path: "/etc/good", Template: "g"}}}))
	m.SetArchive("good", digestA, map[string][]byte{"g": []byte("fine\n")})
	err := m.PutAssignment("ace.bad", []byte(`{"node":"ace","module":"bad","provisioning":{"files":"nope"}}`))
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

func collectorPlan(node, mod, coll string) []byte {
	return planJSON(node, mod, Plan{
		Files:       []FileSpec{{Path: "/etc/" + mod, Template: "t"}},
		Collections: []CollectionSpec{{Name: coll, Comment: "#"}},
	})
}

func TestCollectedTextIsOrderedByContributorWithCommentLines(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	m.PutAssignment("ace.zsh", collectorPlan("ace", "zsh", "shell:zsh:normal"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${shell:zsh:normal}")})
	for _, c := range []string{"b-mod", "a-mod", "c-mod"} {
		m.PutAssignment("ace."+c, planJSON("ace", c, Plan{Items: []ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}}))
		m.SetArchive(c, digestA, map[string][]byte{"i": []byte("alias " + c)})
	}
	m.Stabilize()
	got := string(file(m, "zsh", "/etc/zsh").Value.Content)
	want := "# a-mod\nalias a-mod\n# b-mod\nalias b-mod\n# c-mod\nalias c-mod\n"
	if got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	m.DeleteAssignment("ace.b-mod")
	if touched := m.Stabilize(); strings.Join(touched, ",") != "zsh" {
		t.Fatalf("touched %v", touched)
	}
	if got := string(file(m, "zsh", "/etc/zsh").Value.Content); got != "# a-mod\nalias a-mod\n# c-mod\nalias c-mod\n" {
		t.Fatalf("after removal %q", got)
	}
}

func TestACycleOfCollectionsFailsEveryModuleOnItWithTheCycleNamed(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	m.PutAssignment("ace.a", planJSON("ace", "a", Plan{
		Items: []ItemSpec{{Collection: "c2", Template: "i"}}, Collections: []CollectionSpec{{Name: "c1", Comment: "#"}}}))
	m.SetArchive("a", digestA, map[string][]byte{"i": []byte("${collected:c1}")})
	m.PutAssignment("ace.b", planJSON("ace", "b", Plan{
		Items: []ItemSpec{{Collection: "c1", Template: "i"}}, Collections: []CollectionSpec{{Name: "c2", Comment: "#"}}}))
	m.SetArchive("b", digestA, map[string][]byte{"i": []byte("${collected:c2}")})
	m.Stabilize()
	for _, mod := range []string{"a", "b"} {
		v := m.View(mod)
		if v.State != graph.Failed || !strings.Contains(v.Reason, "cycle: ") || !strings.Contains(v.Reason, "collection:c1") || !strings.Contains(v.Reason, "collection:c2") {
			t.Fatalf("%s: %v %q", mod, v.State, v.Reason)
		}
	}
}

func TestConsumersListsTheBoundConsumersWhoseCredentialIsThere(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	m.PutAssignment("ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []string{"gitea-read"}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	consumer := func(node string) []byte {
		return planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea"}}})
	}
	m.PutAssignment("g14.cc", consumer("g14"))
	m.PutAssignment("ace.cc", consumer("ace"))
	m.PutAssignment("zed.cc", consumer("zed"))
	wanted := m.TakeNewSecrets()
	if len(wanted) != 3 {
		t.Fatalf("wanted %v", wanted)
	}
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("s-ace"))
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"))
	m.SecretWaiting("pair/gitea/gitea-read/zed/cc", "asked the vault, absent")
	m.Stabilize()
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	var list []map[string]string
	if err := json.Unmarshal(f.Value.Content, &list); err != nil || len(list) != 2 || list[0]["consumer"] != "ace" || list[1]["value"] != "s-g14" || f.Value.Spec.Mode != "0600" {
		t.Fatalf("consumers %s %v mode %s", f.Value.Content, err, f.Value.Spec.Mode)
	}
	m.PutAssignment("h.cc", consumer("h"))
	if w := m.TakeNewSecrets(); len(w) != 1 || w[0] != "pair/gitea/gitea-read/h/cc" {
		t.Fatalf("one binding asks %v", w)
	}
	m.DeleteAssignment("g14.cc")
	m.Stabilize()
	if m.WantsSecret("pair/gitea/gitea-read/g14/cc") {
		t.Fatal("an unbound consumer's credential is still held")
	}
}

// 200 modules, 20 collections: one item changes → only that collection's
// collectors render again.
func TestOneItemChangeRendersOnlyItsCollectors(t *testing.T) {
	m := NewMesh("ace")
	registryAll(m)
	for i := 0; i < 200; i++ {
		mod := fmt.Sprint("m", i)
		coll := fmt.Sprint("c", i%20)
		p := Plan{
			Files:       []FileSpec{{Path: "/etc/" + mod, Template: "f"}},
			Items:       []ItemSpec{{Collection: coll, Template: "i"}},
			Collections: []CollectionSpec{{Name: fmt.Sprint("c", (i+1)%20), Comment: "#"}},
		}
		m.PutAssignment("ace."+mod, planJSON("ace", mod, p))
		m.SetArchive(mod, digestA, map[string][]byte{
			"f": []byte(fmt.Sprintf("${collected:c%d}", (i+1)%20)),
			"i": []byte("item ${config:v}"),
		})
		m.PutConfig("ace."+mod+".v", []byte("1"))
	}
	m.Stabilize()
	m.PutConfig("ace.m5.v", []byte("2")) // m5's item is in c5, collected by m4, m24, …
	touched := m.Stabilize()
	want := []string{"m5"}
	for i := 0; i < 200; i++ {
		if (i+1)%20 == 5 {
			want = append(want, fmt.Sprint("m", i))
		}
	}
	if len(touched) != len(want) {
		t.Fatalf("touched %d modules %v, want %d", len(touched), touched, len(want))
	}
}

package nodes

import (
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.5 orders ${consumers:X} by the assignments' keys, as the bucket
// writes them (§2.1): an escaped byte is "=XX", so module "x.y" (key
// ace.x=2Ey) comes after "x0" though '.' is before '0', and the '.' between
// node and module puts ace-b.m before ace.x0. Within a plan the entries keep
// the plan's order; each says its local and its pair/ vault name, and one
// whose credential the vault lacks is left out. The file is the JSON list
// exactly, "[]" when no consumer is served, and 0600 whatever the plan says.
func TestConsumersFollowTheAssignmentsKeysAsTheBucketWritesThem(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files:    []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c", Mode: "0644"}},
		Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	consumer := func(node, mod string, locals ...string) {
		var ps []ProvisionSpec
		for _, l := range locals {
			ps = append(ps, ProvisionSpec{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: l})
		}
		if ch := m.Put(spec.AssignmentsBucket, spec.EncodeKey(node, mod), planJSON(node, mod, Plan{Provisions: ps})); ch.Refused != nil || ch.OutOfShape != nil {
			t.Fatalf("%s.%s: %+v", node, mod, ch)
		}
	}
	m.Stabilize()
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	if f.Value == nil || string(f.Value.mustBytes()) != "[]" {
		t.Fatalf("no consumer: %+v, want the file to be []", f)
	}
	consumer("ace", "x.y", "")
	consumer("ace", "x0", "z", "a")
	consumer("ace-b", "m", "")
	consumer("ace", "absent", "")
	for _, n := range m.TakeNewSecrets() {
		if strings.Contains(n, "/absent") {
			m.SecretAbsent(n, "absent", time.Now())
			continue
		}
		m.SetSecret(n, []byte("v-"+n[strings.LastIndex(n, "/")+1:]), time.Time{})
	}
	m.Stabilize()
	f = file(m, "gitea", "/etc/gitea/consumers.json")
	want := `[{"consumer":"ace-b","module":"m","local":"","credential":"pair/gitea/gitea-read/ace-b/m","value":"v-m"},` +
		`{"consumer":"ace","module":"x0","local":"z","credential":"pair/gitea/gitea-read/ace/x0/z","value":"v-z"},` +
		`{"consumer":"ace","module":"x0","local":"a","credential":"pair/gitea/gitea-read/ace/x0/a","value":"v-a"},` +
		`{"consumer":"ace","module":"x.y","local":"","credential":"pair/gitea/gitea-read/ace/x.y","value":"v-x.y"}]`
	if f.Value == nil || string(f.Value.mustBytes()) != want {
		t.Fatalf("consumers file %+v:\n%s\nwant\n%s", f, f.Value.mustBytes(), want)
	}
	if f.Value.Spec.Mode != "0600" {
		t.Errorf("consumers file mode %s, want 0600 whatever the plan says", f.Value.Spec.Mode)
	}
}

// SPEC §4.4 orders ${collected:C} by contributor name in byte order: the
// names, not their keys (B before _ before a.x before a0 before b, though
// the key of a.x, a=2Ex, sorts after a0's). Each item is introduced by
// "<comment> <contributor>" and ends in a newline (one is added only when
// it has none); an empty item is an empty line.
func TestCollectedFollowsTheContributorsNamesInByteOrder(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.rc", collectorPlan("ace", "rc", "environment:posix"))
	m.SetArchive("rc", digestA, map[string][]byte{"t": []byte("${environment:posix}")})
	for c, text := range map[string]string{"b": "i b\n", "B": "i B", "a.x": "", "a0": "i a0\n\n", "_": "i _"} {
		m.Put(spec.AssignmentsBucket, spec.EncodeKey("ace", c), planJSON("ace", c, Plan{Items: []ItemSpec{{Collection: "environment:posix", Template: "i"}}}))
		m.SetArchive(c, digestA, map[string][]byte{"i": []byte(text)})
	}
	m.Stabilize()
	want := "# B\ni B\n# _\ni _\n# a.x\n\n# a0\ni a0\n\n# b\ni b\n"
	if got := string(file(m, "rc", "/etc/rc").Value.mustBytes()); got != want {
		t.Fatalf("collected %q, want %q", got, want)
	}
	// An item dropped from its plan's items[] (the module stays) leaves.
	m.Put(spec.AssignmentsBucket, "ace.a0", planJSON("ace", "a0", Plan{}))
	m.Stabilize()
	if got := string(file(m, "rc", "/etc/rc").Value.mustBytes()); got != "# B\ni B\n# _\ni _\n# a.x\n\n# b\ni b\n" {
		t.Fatalf("after a0 dropped its item: %q", got)
	}
}

// SPEC §4.6 reads a provider's offers from its first key in byte order, as
// the bucket writes keys: gitea on node n0 (n0.gitea) before gitea on node
// n.1 (n=2E1.gitea), though "n.1" sorts before "n0".
func TestTheProvidersFirstKeyIsTheFirstAsTheBucketWritesIt(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	provider := func(node, url string) {
		m.Put(spec.AssignmentsBucket, spec.EncodeKey(node, "gitea"), planJSON(node, "gitea", Plan{Provides: []Offer{
			{Provision: "forge-account", AnsweredBy: AnsweredByHelper},
			{Provision: "gitea-read", Have: map[string]string{"url": url}}}}))
	}
	provider("n.1", "https://n.1")
	provider("n0", "https://n0")
	m.Put(spec.AssignmentsBucket, "ace.cc", planJSON("ace", "cc", Plan{Files: []FileSpec{{Path: "/etc/cc", Template: "t"}},
		Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}}))
	m.SetArchive("cc", digestA, map[string][]byte{"t": []byte("url = ${bound:gitea-read:url}\n")})
	m.Stabilize()
	if f := file(m, "cc", "/etc/cc"); f.Value == nil || string(f.Value.mustBytes()) != "url = https://n0\n" {
		t.Fatalf("cc's file %+v, want the have of gitea's plan at n0.gitea", f)
	}
}

// SPEC §2.1: a token that encodes to something else than it reads is out
// of shape. c=63 reads "cc" but cc is written "cc": the key is no
// assignment, so it makes no module and binds no consumer a second time.
func TestAKeyNotAsTheNamesEncodeMakesNoModuleAndBindsNoConsumer(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	cc := func(node string) []byte {
		return planJSON(node, "cc", Plan{Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}})
	}
	m.Put(spec.AssignmentsBucket, "g14.cc", cc("g14"))
	for _, key := range []string{"g14.c=63", "=67=31=34.cc", "g14.c=63=", "ace.c=63", "ace.c=2ec"} {
		if ch := m.Put(spec.AssignmentsBucket, key, cc(strings.SplitN(key, ".", 2)[0])); ch.OutOfShape == nil || ch.Added != "" {
			t.Errorf("%s: %+v, want out of shape", key, ch)
		}
	}
	if got := m.Modules(); len(got) != 1 || got[0] != "gitea" {
		t.Errorf("modules %v, want gitea alone", got)
	}
	if w := m.TakeNewSecrets(); len(w) != 1 || w[0] != "pair/gitea/gitea-read/g14/cc" {
		t.Fatalf("asked %v, want g14's cc alone", w)
	}
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s"), time.Time{})
	m.Stabilize()
	if got := string(file(m, "gitea", "/etc/gitea/consumers.json").Value.mustBytes()); strings.Count(got, `"consumer"`) != 1 {
		t.Fatalf("consumers %s, want g14's cc once", got)
	}
}

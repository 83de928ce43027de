package examples

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// waitingNeed is the one value the example mesh leaves unset on purpose, so
// the lab shows a module waiting and graph explain has something to say.
const waitingNeed = "g14.grafana: ${config:smtp-host}"

func loadExample(t *testing.T) *Mesh {
	t.Helper()
	m, err := LoadMesh(meshFS())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func parseAll(t *testing.T, m *Mesh) map[string]*nodes.Assignment {
	t.Helper()
	out := map[string]*nodes.Assignment{}
	for _, key := range slices.Sorted(maps.Keys(m.Assignments)) {
		a, err := nodes.ParseAssignment(key, m.Assignments[key])
		if err != nil {
			t.Errorf("assignments/%s.json: %v", key, err)
			continue
		}
		out[key] = a
	}
	return out
}

// template parses module's template name as the client would.
func template(m *Mesh, module, name string) (*nodes.Template, error) {
	text, ok := m.Templates[module][name]
	if !ok {
		return nil, fmt.Errorf("templates/%s/%s does not exist", module, name)
	}
	tpl, err := nodes.ParseTemplate(name, text)
	if err != nil {
		return nil, fmt.Errorf("templates/%s/%s: %w", module, name, err)
	}
	if err := nodes.CheckKinds(tpl); err != nil {
		return nil, fmt.Errorf("templates/%s/%s: %w", module, name, err)
	}
	return tpl, nil
}

// TestExampleAssignmentsParse: every assignment is a valid plan under its
// file name's key, and the modules the README promises are there.
func TestExampleAssignmentsParse(t *testing.T) {
	m := loadExample(t)
	as := parseAll(t, m)
	for _, key := range []string{"ace.gitea", "ace.claude-code", "g14.claude-code", "ace.zsh", "g14.zsh", "ace.sshd", "g14.grafana"} {
		if as[key] == nil {
			t.Errorf("assignment %s missing or invalid", key)
		}
	}
	forms := map[string]bool{}
	for _, a := range as {
		for _, f := range a.Provisioning.Files {
			forms[f.Form] = true
		}
		if want := "sha256:" + strings.Repeat("0", 64); a.Provisioning.Templates.Digest != want {
			t.Errorf("%s.%s: templates.digest %q, want the placeholder %s (the lab sets the real one)", a.Node, a.Module, a.Provisioning.Templates.Digest, want)
		}
		if want := "obj://mesh-artifacts/" + a.Module + ".tar.gz"; a.Provisioning.Templates.Ref != want {
			t.Errorf("%s.%s: templates.ref %q, want %s", a.Node, a.Module, a.Provisioning.Templates.Ref, want)
		}
	}
	for _, f := range []string{nodes.FormOwned, nodes.FormSeed, nodes.FormManagedKeys, nodes.FormManagedBlock} {
		if !forms[f] {
			t.Errorf("no example file has form %s", f)
		}
	}
}

// TestExampleTemplatesParse: every template a plan names exists, parses and
// names only kinds the client fills; no item names a secret or consumers;
// every template file is used by some plan.
func TestExampleTemplatesParse(t *testing.T) {
	m := loadExample(t)
	used := map[string]bool{}
	for key, a := range parseAll(t, m) {
		p := &a.Provisioning
		for _, f := range p.Files {
			used[a.Module+"/"+f.Template] = true
			if _, err := template(m, a.Module, f.Template); err != nil {
				t.Errorf("%s: file %s: %v", key, f.Path, err)
			}
		}
		for _, it := range p.Items {
			used[a.Module+"/"+it.Template] = true
			tpl, err := template(m, a.Module, it.Template)
			if err != nil {
				t.Errorf("%s: item %s: %v", key, it.Collection, err)
				continue
			}
			for _, ph := range tpl.Placeholders() {
				if ph.Kind == "secret" || ph.Kind == "consumers" {
					t.Errorf("%s: item %s names %s: an item is kept in a bucket and may hold no secret", key, it.Collection, ph)
				}
			}
		}
	}
	for module, members := range m.Templates {
		for name := range members {
			if !used[module+"/"+name] {
				t.Errorf("templates/%s/%s is named by no plan", module, name)
			}
		}
	}
}

// TestExampleValuesComplete: every placeholder of the example has its value
// in config.json, bound.json, secrets.json or the plan — all but the one
// left unset on purpose — so the lab fills every module except that one.
func TestExampleValuesComplete(t *testing.T) {
	m := loadExample(t)
	as := parseAll(t, m)
	var missing []string
	for _, key := range slices.Sorted(maps.Keys(as)) {
		a := as[key]
		var names []string
		for _, f := range a.Provisioning.Files {
			names = append(names, f.Template)
		}
		for _, it := range a.Provisioning.Items {
			names = append(names, it.Template)
		}
		for _, name := range names {
			tpl, err := template(m, a.Module, name)
			if err != nil {
				t.Fatal(err)
			}
			for _, ph := range tpl.Placeholders() {
				if why := resolve(m, as, a, ph); why != "" {
					missing = append(missing, fmt.Sprintf("%s: %s", key, ph))
					t.Logf("%s: %s (%s): %s", key, ph, name, why)
				}
			}
		}
		for _, s := range a.Provisioning.Secrets {
			if _, ok := m.Secrets["own/"+a.Module+"/"+s.Name]; !ok {
				missing = append(missing, fmt.Sprintf("%s: secret %s", key, s.Name))
			}
		}
	}
	if !slices.Equal(missing, []string{waitingNeed}) {
		t.Errorf("values missing: %q, want exactly %q", missing, waitingNeed)
	}
}

// resolve says why ph of assignment a has no value in the example ("" when
// it has one).
func resolve(m *Mesh, as map[string]*nodes.Assignment, a *nodes.Assignment, ph nodes.Placeholder) string {
	p := &a.Provisioning
	switch {
	case ph.Kind == "config":
		if _, ok := m.Config[spec.EncodeKey(a.Node, a.Module, ph.Name)]; !ok {
			return "not in config.json"
		}
	case spec.IsPlacementKind(ph.Kind):
		if _, ok := p.Placement[string(ph.Kind)][ph.Name]; !ok {
			return "not in the plan's placement"
		}
	case ph.Kind == "secret":
		vaultName := ""
		for _, s := range p.Secrets {
			if s.Name == ph.Name {
				vaultName = "own/" + a.Module + "/" + s.Name
			}
		}
		for _, pr := range p.Provisions {
			if pr.Name == ph.Name {
				vaultName = strings.Join([]string{"provision", pr.Provider, pr.Provision, a.Node, a.Module}, "/")
			}
		}
		if vaultName == "" {
			return "no secret or provisions entry of that name"
		}
		if _, ok := m.Secrets[vaultName]; !ok {
			return vaultName + " not in secrets.json"
		}
	case spec.IsCollectionKind(ph.Kind):
		if _, ok := p.Collects(nodes.CollectionName(ph)); !ok {
			return "the module's collections[] does not list it"
		}
	case ph.Kind == "consumers":
		if !p.ProvidesProvision(ph.Name) {
			return "the module does not provide it"
		}
		n := 0
		for _, c := range as {
			for _, pr := range c.Provisioning.Provisions {
				if pr.Provider == a.Module && pr.Provision == ph.Name {
					n++
					name := strings.Join([]string{"pair", a.Module, ph.Name, c.Node, c.Module}, "/")
					if pr.Local != "" {
						name += "/" + pr.Local
					}
					if _, ok := m.Secrets[name]; !ok {
						return name + " not in secrets.json"
					}
				}
			}
		}
		if n == 0 {
			return "no consumer"
		}
	case ph.Kind == "bound":
		x, l, k, err := nodes.ParseBoundName(ph.Name)
		if err != nil {
			return err.Error()
		}
		pr, ok := p.ProvisionFor(x, l)
		if !ok {
			return "no provisions entry"
		}
		// SPEC §4.6: judged by the provider's offers, from its plan.
		var provider *nodes.Assignment
		for _, key := range slices.Sorted(maps.Keys(as)) {
			if as[key].Module == pr.Provider {
				provider = as[key]
				break
			}
		}
		if provider == nil {
			return "provider " + pr.Provider + " is assigned nowhere"
		}
		switch j := nodes.Judge(provider.Provisioning.Provides, x); j.Rule {
		case nodes.RuleNotOffered:
			return pr.Provider + " does not offer " + x
		case nodes.RuleHave:
			if _, ok := j.Have[k]; !ok {
				return pr.Provider + "'s offer " + x + " has no " + k
			}
			return ""
		}
		bkey := spec.EncodeKey(a.Node, a.Module, x)
		if l != "" {
			bkey = spec.EncodeKey(a.Node, a.Module, x, l)
		}
		raw, ok := m.Bound[pr.Provider+"_bound"][bkey]
		if !ok {
			return bkey + " not in bound.json"
		}
		var e struct {
			State  string            `json:"state"`
			Values map[string]string `json:"values"`
		}
		if err := json.Unmarshal(raw, &e); err != nil || e.State != "bound" {
			return fmt.Sprintf("%s is not a bound entry (%v)", bkey, err)
		}
		if _, ok := e.Values[k]; !ok {
			return bkey + " has no value " + k
		}
	default:
		return "kind not known to this test"
	}
	return ""
}

// TestExampleItemsCollected: every item goes to a collection a module on
// the same node collects.
func TestExampleItemsCollected(t *testing.T) {
	m := loadExample(t)
	as := parseAll(t, m)
	for key, a := range as {
		for _, it := range a.Provisioning.Items {
			found := false
			for _, c := range as {
				if _, ok := c.Provisioning.Collects(it.Collection); ok && c.Node == a.Node {
					found = true
				}
			}
			if !found {
				t.Errorf("%s contributes to %s, which no module on %s collects", key, it.Collection, a.Node)
			}
		}
	}
}

// TestExampleDataFiles: config, bound and secrets are in the shapes the
// buckets and the vault take, and no secret value shows outside secrets.json.
func TestExampleDataFiles(t *testing.T) {
	m := loadExample(t)
	for k := range m.Config {
		if _, err := spec.DecodeKey(k, 3); err != nil {
			t.Errorf("config.json: key %q: %v", k, err)
		}
	}
	for bucket, entries := range m.Bound {
		if !strings.HasSuffix(bucket, "_bound") {
			t.Errorf("bound.json: %q is not a <provider>_bound bucket", bucket)
		}
		for k := range entries {
			if _, err := spec.DecodeKey(k, 3); err != nil {
				t.Errorf("bound.json: %s key %q: %v", bucket, k, err)
			}
		}
	}
	var public bytes.Buffer
	for _, v := range m.Assignments {
		public.Write(v)
	}
	for _, members := range m.Templates {
		for _, v := range members {
			public.Write(v)
		}
	}
	for _, v := range m.Config {
		public.WriteString(v)
	}
	for name, v := range m.Secrets {
		if !strings.HasPrefix(v, "dev-only-") {
			t.Errorf("secrets.json: %s does not look like a dev-only value", name)
		}
		if bytes.Contains(public.Bytes(), []byte(v)) {
			t.Errorf("the value of %s shows outside secrets.json", name)
		}
	}
}

// TestExampleArchives: the archive of a module is the same bytes each time,
// holds its templates, and an assignment given its ref and digest still
// parses with them.
func TestExampleArchives(t *testing.T) {
	m := loadExample(t)
	a1, d1, err := m.Archive("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	a2, d2, _ := m.Archive("claude-code")
	if !bytes.Equal(a1, a2) || d1 != d2 {
		t.Error("two archives of claude-code differ")
	}
	if _, _, err := m.Archive("no-such-module"); err == nil {
		t.Error("archive of a module with no templates: no error")
	}
	data, err := m.WithTemplates("ace.claude-code", "obj://mesh-artifacts/claude-code.tar.gz", d1)
	if err != nil {
		t.Fatal(err)
	}
	a, err := nodes.ParseAssignment("ace.claude-code", data)
	if err != nil {
		t.Fatalf("assignment with the real digest: %v", err)
	}
	if a.Provisioning.Templates.Digest != d1 || len(a.Provisioning.Files) != 2 {
		t.Errorf("templates %+v, %d files after WithTemplates", a.Provisioning.Templates, len(a.Provisioning.Files))
	}
	if _, err := m.WithTemplates("ace.nothing", "obj://x/y", d1); err == nil {
		t.Error("WithTemplates of a missing assignment: no error")
	}
}

// TestEmbeddedFiles: Files carries the same mesh as the directory, and the
// config and units.
func TestEmbeddedFiles(t *testing.T) {
	sub, err := fs.Sub(Files, "mesh")
	if err != nil {
		t.Fatal(err)
	}
	emb, err := LoadMesh(sub)
	if err != nil {
		t.Fatal(err)
	}
	if disk := loadExample(t); !reflect.DeepEqual(emb, disk) {
		t.Error("the embedded mesh differs from examples/mesh")
	}
	for _, f := range []string{"nats/server.conf", "systemd/mesh-provisioner-client.service",
		"systemd/mesh-provisioner.service", "systemd/mesh-fill.service"} {
		if _, err := fs.Stat(Files, f); err != nil {
			t.Errorf("%s not embedded: %v", f, err)
		}
	}
	if _, err := LoadMesh(fsWithout(sub, "assignments")); err == nil || !strings.Contains(err.Error(), "assignments") {
		t.Errorf("a mesh without assignments: %v", err)
	}
}

// hidden is an FS with one directory hidden.
type hidden struct {
	fs.FS
	dir string
}

// fsWithout is fsys with dir hidden.
func fsWithout(fsys fs.FS, dir string) fs.FS { return hidden{fsys, dir} }

func (h hidden) Open(name string) (fs.File, error) {
	if name == h.dir || strings.HasPrefix(name, h.dir+"/") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return h.FS.Open(name)
}

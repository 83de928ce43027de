package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// specExample is the assignment of SPEC §3.
const specExample = `{
  "node": "ace",
  "module": "claude-code",
  "provisioning": {
    "templates": {"ref": "obj://mesh-artifacts/claude-code-7f3a.tar.gz",
                  "digest": "` + digest + `"},
    "files": [
      {"path": "/etc/claude-code/config.toml", "template": "config.toml",
       "owner": "claude", "group": "claude", "mode": "0640",
       "form": "owned", "on_change": {"action": "restart", "unit": "claude-code.service"}}
    ],
    "placement": {
      "dir": {"state": "/var/lib/claude-code"},
      "port": {"http": "8417"},
      "access": {"forge": "https://forge.mesh.internal"},
      "seat": {"vault": "mesh-vault"},
      "machine": {"name": "ace", "account": "jochen"}
    },
    "secrets": [{"name": "api-key", "path": "/etc/claude-code/api-key",
                 "owner": "claude", "mode": "0600"}],
    "provisions": [{"name": "forge-token", "provision": "gitea-read",
                    "provider": "gitea", "credential": "token", "local": ""}],
    "provides": [],
    "items": [{"collection": "shell:zsh:normal", "template": "zsh-item.sh"}],
    "collections": [],
    "future_field": {"anything": [1, 2]}
  }
}`

// example is specExample as generic JSON, for editing.
func example(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(specExample), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func plan(m map[string]any) map[string]any { return m["provisioning"].(map[string]any) }

func list(m map[string]any, field string) []any { return plan(m)[field].([]any) }

func entry(m map[string]any, field string, i int) map[string]any {
	return list(m, field)[i].(map[string]any)
}

func marshal(t testing.TB, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseAssignmentSpecExample(t *testing.T) {
	a, err := ParseAssignment("ace.claude-code", []byte(specExample))
	if err != nil {
		t.Fatal(err)
	}
	p := a.Provisioning
	if a.Node != "ace" || a.Module != "claude-code" || len(p.Files) != 1 || p.Files[0].OnChange.Unit != "claude-code.service" ||
		p.Placement["port"]["http"] != "8417" || p.Provisions[0].Credential != "token" || p.Items[0].Collection != "shell:zsh:normal" {
		t.Fatalf("parsed %+v", a)
	}
	if got := p.SecretNames(); fmt.Sprint(got) != "[api-key forge-token]" {
		t.Fatalf("SecretNames = %v", got)
	}
	if pr, ok := p.ProvisionFor("gitea-read", ""); !ok || pr.Provider != "gitea" {
		t.Fatalf("ProvisionFor = %+v, %v", pr, ok)
	}
	if _, ok := p.ProvisionFor("gitea-read", "second"); ok {
		t.Fatal("ProvisionFor found a local the plan does not hold")
	}
}

// TestAModeWithMoreLeadingZerosIsTheMode: "00640" is octal text (SPEC
// §3), as chmod and mesh-fill read it; it was refused as not octal, and
// the module failed. It is sent as its four digits.
func TestAModeWithMoreLeadingZerosIsTheMode(t *testing.T) {
	for _, mode := range []string{"00640", "000640", "0000640"} {
		m := example(t)
		entry(m, "files", 0)["mode"] = mode
		entry(m, "secrets", 0)["mode"] = "000400"
		a, err := ParseAssignment("ace.claude-code", marshal(t, m))
		if err != nil {
			t.Fatalf("mode %q: %v", mode, err)
		}
		if got := DefaultMode(a.Provisioning.Files[0].Form, false, a.Provisioning.Files[0].Mode); got != "0640" {
			t.Errorf("mode %q is sent as %q, want 0640", mode, got)
		}
		if got := SecretFileMode(a.Provisioning.Secrets[0].Mode); got != "0400" {
			t.Errorf("secret mode 000400 is sent as %q, want 0400", got)
		}
	}
}

func TestParseAssignmentDefaults(t *testing.T) {
	m := example(t)
	f := entry(m, "files", 0)
	delete(f, "form")
	delete(f, "on_change")
	delete(f, "mode")
	a, err := ParseAssignment("ace.claude-code", marshal(t, m))
	if err != nil {
		t.Fatal(err)
	}
	got := a.Provisioning.Files[0]
	if got.Form != "owned" || got.OnChange.Action != "none" || got.Mode != "" {
		t.Fatalf("defaults: form %q action %q mode %q", got.Form, got.OnChange.Action, got.Mode)
	}
	if s, p := a.Provisioning.Secrets[0], a.Provisioning.Provisions[0]; s.OnChange.Action != "none" || p.OnChange.Action != "none" {
		t.Fatalf("defaults: secret action %q, provision action %q", s.OnChange.Action, p.OnChange.Action)
	}
}

func TestParseAssignmentEncodedKey(t *testing.T) {
	m := example(t)
	m["node"], m["module"] = "g14.lan", "shell:zsh"
	if _, err := ParseAssignment(spec.EncodeKey("g14.lan", "shell:zsh"), marshal(t, m)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ace", "ace.claude-code.x", "ace.=41", "ace.claude code", ""} {
		_, err := ParseAssignment(key, []byte(specExample))
		var pe *PlanError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "key out of shape") || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
			t.Errorf("key %q: error %v", key, err)
		}
	}
}

// A module or node name holding '/' or being "." or ".." would make vault
// names ambiguous (own/a/b/k: module a's b/k or module a/b's k?), and one
// over MaxNameBytes would make keys longer than the bus takes (issue 19.12
// and 19.1): the module fails, naming the field.
func TestParseAssignmentKeyNames(t *testing.T) {
	long := strings.Repeat("m", 256)
	for _, c := range []struct{ node, module, want string }{
		{"ace", "a/b", `module name "a/b" holds "/"`},
		{"ace", "..", `module name ".." is ".."`},
		{"ace", ".", `module name "." is "."`},
		{"a/ce", "web", `node name "a/ce" holds "/"`},
		{"ace", long, "module name is 256 bytes encoded, over the limit of 255 (MaxNameBytes)"},
		{"ace", strings.Repeat("é", 43), "module name is 258 bytes encoded"},
	} {
		m := example(t)
		m["node"], m["module"] = c.node, c.module
		_, err := ParseAssignment(spec.EncodeKey(c.node, c.module), marshal(t, m))
		var pe *PlanError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s.%s: error %v, want a PlanError saying %q", c.node, c.module, err, c.want)
		}
	}
}

// An assignment without "provisioning" is not the provisioner's (SPEC §3
// r2); node and module, when absent, are the key's.
func TestParseAssignmentWithoutPlanOrNames(t *testing.T) {
	for _, data := range []string{`{"node":"ace","module":"web"}`, `{}`, `{"provisioning":null,"other":1}`,
		`{"node":{"name":"ace"},"module":7,"runs":"x"}`} { // another domain's value: its fields are its own
		if a, err := ParseAssignment("ace.web", []byte(data)); !errors.Is(err, ErrNoPlan) || a != nil {
			t.Errorf("%s: got %v, %v; want ErrNoPlan", data, a, err)
		}
	}
	m := example(t)
	delete(m, "node")
	delete(m, "module")
	a, err := ParseAssignment("ace.claude-code", marshal(t, m))
	if err != nil || a.Node != "ace" || a.Module != "claude-code" {
		t.Fatalf("without node and module: %+v, %v", a, err)
	}
	m["node"], m["module"] = nil, nil // null is no name given: the key's
	a, err = ParseAssignment("ace.claude-code", marshal(t, m))
	if err != nil || a.Node != "ace" || a.Module != "claude-code" {
		t.Fatalf("node and module null: %+v, %v", a, err)
	}
}

func TestParseAssignmentRules(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(m map[string]any)
		want string
	}{
		{"node differs", func(m map[string]any) { m["node"] = "g14" }, `node "g14" in the JSON is not the key's node "ace"`},
		{"module differs", func(m map[string]any) { m["module"] = "other" }, `module "other" in the JSON is not the key's module "claude-code"`},
		// Present, though empty, is not absent (SPEC §3 r2: "when present, must equal the key's tokens").
		{"node empty", func(m map[string]any) { m["node"] = "" }, `node "" in the JSON is not the key's node "ace"`},
		{"module empty", func(m map[string]any) { m["module"] = "" }, `module "" in the JSON is not the key's module "claude-code"`},
		{"ref scheme", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "https://x/y.tar" }, "templates.ref"},
		{"ref obj without name", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "obj://mesh-artifacts/" }, "obj://<bucket>/<name>"},
		{"ref obj bad bucket", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "obj://a.b/x" }, "obj://<bucket>/<name>"},
		{"ref file relative", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "file://tmp/x.tar" }, `names host "tmp"`},
		{"ref file other host", func(m map[string]any) {
			plan(m)["templates"].(map[string]any)["ref"] = "file://forge.mesh.internal/srv/x.tar"
		}, `templates.ref "file://forge.mesh.internal/srv/x.tar" is not file:///<absolute path>: it names host "forge.mesh.internal": only a file of this machine is read`},
		{"ref file dotdot", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "file:///tmp/../x.tar" }, `".."`},
		{"ref file bad escape", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "file:///srv/50%off.tar" }, `a "%" in a file name is written %25`},
		{"ref file escaped dotdot", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "file:///srv/%2E%2E/x.tar" }, `".."`},
		{"ref file escaped NUL", func(m map[string]any) { plan(m)["templates"].(map[string]any)["ref"] = "file:///srv/x%00.tar" }, "NUL"},
		{"ref missing", func(m map[string]any) { delete(plan(m)["templates"].(map[string]any), "ref") }, "templates.ref"},
		{"digest upper", func(m map[string]any) {
			plan(m)["templates"].(map[string]any)["digest"] = strings.ToUpper(digest[:7]) + digest[7:]
		}, "templates.digest"},
		{"digest hex upper", func(m map[string]any) {
			plan(m)["templates"].(map[string]any)["digest"] = digest[:7] + strings.ToUpper(digest[7:])
		}, "templates.digest"},
		{"digest short", func(m map[string]any) { plan(m)["templates"].(map[string]any)["digest"] = digest[:70] }, "templates.digest"},
		{"digest algo", func(m map[string]any) { plan(m)["templates"].(map[string]any)["digest"] = "md5:" + digest[7:] }, "templates.digest"},
		{"file path relative", func(m map[string]any) { entry(m, "files", 0)["path"] = "etc/x" }, `files[0]: path "etc/x" is not absolute`},
		{"file path dotdot", func(m map[string]any) { entry(m, "files", 0)["path"] = "/etc/../x" }, `files[0]: path "/etc/../x" holds ".."`},
		{"file path unclean", func(m map[string]any) { entry(m, "files", 0)["path"] = "/etc//x/" }, "not clean"},
		{"file path empty", func(m map[string]any) { entry(m, "files", 0)["path"] = "" }, "files[0]: path is empty"},
		{"file path root", func(m map[string]any) { entry(m, "files", 0)["path"] = "/" }, "directory"},
		{"file template empty", func(m map[string]any) { delete(entry(m, "files", 0), "template") }, "files[0] (/etc/claude-code/config.toml): template name is empty"},
		{"file template escapes", func(m map[string]any) { entry(m, "files", 0)["template"] = "../x" }, `template "../x" holds ".."`},
		{"file template absolute", func(m map[string]any) { entry(m, "files", 0)["template"] = "/x" }, "absolute"},
		{"form", func(m map[string]any) { entry(m, "files", 0)["form"] = "merged" }, `form "merged" is not owned, seed, managed-keys or managed-block`},
		{"mode words", func(m map[string]any) { entry(m, "files", 0)["mode"] = "rw-r-----" }, `mode "rw-r-----" is not octal`},
		{"mode eight", func(m map[string]any) { entry(m, "files", 0)["mode"] = "0648" }, `mode "0648"`},
		{"mode long", func(m map[string]any) { entry(m, "files", 0)["mode"] = "000000640" }, `mode "000000640"`},
		{"mode long digits", func(m map[string]any) { entry(m, "files", 0)["mode"] = "10640" }, `mode "10640"`},
		{"mode sticky", func(m map[string]any) { entry(m, "files", 0)["mode"] = "1777" }, `files[0] (/etc/claude-code/config.toml): mode "1777" sets setuid, setgid or sticky bits`},
		{"mode setuid", func(m map[string]any) { entry(m, "files", 0)["mode"] = "4755" }, `files[0] (/etc/claude-code/config.toml): mode "4755" sets setuid`},
		{"secret mode setgid", func(m map[string]any) { entry(m, "secrets", 0)["mode"] = "2600" }, `secrets[0] (api-key): mode "2600" sets setuid`},
		{"owner", func(m map[string]any) { entry(m, "files", 0)["owner"] = "a b" }, `owner "a b"`},
		{"action", func(m map[string]any) {
			entry(m, "files", 0)["on_change"] = map[string]any{"action": "kill", "unit": "x.service"}
		}, `on_change.action "kill" is not restart, reload or none`},
		{"restart without unit", func(m map[string]any) {
			entry(m, "files", 0)["on_change"] = map[string]any{"action": "restart"}
		}, `on_change.action "restart" needs a unit`},
		{"reload without unit", func(m map[string]any) {
			entry(m, "files", 0)["on_change"] = map[string]any{"action": "reload", "unit": " "}
		}, `on_change.action "reload" needs a unit`},
		{"secret action", func(m map[string]any) {
			entry(m, "secrets", 0)["on_change"] = map[string]any{"action": "kill", "unit": "x.service"}
		}, `secrets[0] (api-key): on_change.action "kill" is not restart, reload or none`},
		{"secret restart without unit", func(m map[string]any) {
			entry(m, "secrets", 0)["on_change"] = map[string]any{"action": "restart"}
		}, `secrets[0] (api-key): on_change.action "restart" needs a unit`},
		{"provision reload without unit", func(m map[string]any) {
			entry(m, "provisions", 0)["on_change"] = map[string]any{"action": "reload", "unit": ""}
		}, `provisions[0] (gitea-read): on_change.action "reload" needs a unit`},
		{"same path twice", func(m map[string]any) {
			plan(m)["files"] = append(list(m, "files"), map[string]any{"path": "/etc/claude-code/config.toml", "template": "b"})
		}, "files[1] (/etc/claude-code/config.toml): path /etc/claude-code/config.toml is also written by files[0]"},
		{"secret path is a file's", func(m map[string]any) { entry(m, "secrets", 0)["path"] = "/etc/claude-code/config.toml" }, "secrets[0] (api-key): path /etc/claude-code/config.toml is also written by files[0]"},
		{"secret path relative", func(m map[string]any) { entry(m, "secrets", 0)["path"] = "api-key" }, `secrets[0] (api-key): path "api-key" is not absolute`},
		{"secret name empty", func(m map[string]any) { entry(m, "secrets", 0)["name"] = "" }, "secrets[0]: name \"\" is empty"},
		{"secret name brace", func(m map[string]any) { entry(m, "secrets", 0)["name"] = "a}b" }, `holds "}"`},
		{"secret twice", func(m map[string]any) {
			plan(m)["secrets"] = append(list(m, "secrets"), map[string]any{"name": "api-key"})
		}, `secrets[1] (api-key): secret name "api-key" is also used by secrets[0]`},
		{"secret mode", func(m map[string]any) { entry(m, "secrets", 0)["mode"] = "600x" }, `mode "600x"`},
		{"provision name is a secret's", func(m map[string]any) { entry(m, "provisions", 0)["name"] = "api-key" }, `provisions[0] (gitea-read): secret name "api-key" is also used by secrets[0]`},
		{"provision empty", func(m map[string]any) { entry(m, "provisions", 0)["provision"] = "" }, `provisions[0]: provision "" is empty`},
		{"provision with colon", func(m map[string]any) { entry(m, "provisions", 0)["provision"] = "a:b" }, `provision "a:b" holds ":"`},
		{"provider empty", func(m map[string]any) { delete(entry(m, "provisions", 0), "provider") }, `provisions[0] (gitea-read): provider ""`},
		{"provider bad", func(m map[string]any) { entry(m, "provisions", 0)["provider"] = "gi.tea" }, `provider "gi.tea"`},
		{"local with colon", func(m map[string]any) { entry(m, "provisions", 0)["local"] = "a:b" }, `local "a:b"`},
		{"provision without credential", func(m map[string]any) { delete(entry(m, "provisions", 0), "credential") }, `provisions[0] (gitea-read): no credential`},
		{"local with slash", func(m map[string]any) { entry(m, "provisions", 0)["local"] = "a/b" }, `provisions[0] (gitea-read): local "a/b" holds "/"`},
		{"local dotdot", func(m map[string]any) { entry(m, "provisions", 0)["local"] = ".." }, `provisions[0] (gitea-read): local ".." is ".."`},
		{"secret name with slash", func(m map[string]any) { entry(m, "secrets", 0)["name"] = "b/k" }, `secrets[0]: name "b/k" holds "/"`},
		{"secret name dot", func(m map[string]any) { entry(m, "secrets", 0)["name"] = "." }, `secrets[0]: name "." is "."`},
		{"secret name long", func(m map[string]any) { entry(m, "secrets", 0)["name"] = strings.Repeat("k", 256) }, "is 256 bytes encoded, over the limit of 255 (MaxNameBytes)"},
		{"collection long", func(m map[string]any) {
			plan(m)["collections"] = []any{map[string]any{"name": strings.Repeat(".", 86)}}
		}, "collections[0]: collection name is 258 bytes encoded, over the limit of 255 (MaxNameBytes)"},
		{"item collection long", func(m map[string]any) { entry(m, "items", 0)["collection"] = strings.Repeat("c", 300) }, "items[0]: collection is 300 bytes encoded, over the limit of 255"},
		{"provision long", func(m map[string]any) { entry(m, "provisions", 0)["provision"] = strings.Repeat("p", 256) }, "provisions[0]: provision is 256 bytes encoded, over the limit of 255"},
		{"provision twice", func(m map[string]any) {
			plan(m)["provisions"] = append(list(m, "provisions"), map[string]any{"provision": "gitea-read", "provider": "gitea2", "credential": "token"})
		}, `provisions[1] (gitea-read): provision "gitea-read" local "" is also required by provisions[0]`},
		{"provision path without name", func(m map[string]any) {
			delete(entry(m, "provisions", 0), "name")
			entry(m, "provisions", 0)["path"] = "/etc/t"
		}, "a path needs a name"},
		{"provision path relative", func(m map[string]any) { entry(m, "provisions", 0)["path"] = "t" }, `provisions[0] (gitea-read): path "t" is not absolute`},
		{"provision path is a secret's", func(m map[string]any) { entry(m, "provisions", 0)["path"] = "/etc/claude-code/api-key" }, "also written by secrets[0] (api-key)"},
		{"provides empty", func(m map[string]any) { plan(m)["provides"] = []any{""} }, `provides[0]: provision "" is empty`},
		{"provides twice", func(m map[string]any) { plan(m)["provides"] = []any{"x", "x"} }, `provides[1]: provision "x" is listed twice`},
		{"item without collection", func(m map[string]any) { delete(entry(m, "items", 0), "collection") }, `items[0]: collection "" is empty`},
		{"item without template", func(m map[string]any) { delete(entry(m, "items", 0), "template") }, "items[0] (shell:zsh:normal): template name is empty"},
		{"two items one collection", func(m map[string]any) {
			plan(m)["items"] = append(list(m, "items"), map[string]any{"collection": "shell:zsh:normal", "template": "b"})
		}, `items[1] (shell:zsh:normal): the module already contributes to collection "shell:zsh:normal" in items[0]`},
		{"collection empty", func(m map[string]any) { plan(m)["collections"] = []any{map[string]any{"comment": "#"}} }, `collections[0]: name "" is empty`},
		{"collection twice", func(m map[string]any) {
			plan(m)["collections"] = []any{map[string]any{"name": "c"}, map[string]any{"name": "c", "comment": "#"}}
		}, `collections[1]: collection "c" is also listed in collections[0]`},
		{"placement kind", func(m map[string]any) { plan(m)["placement"].(map[string]any)["config"] = map[string]any{"a": "b"} }, `placement kind "config" is not dir, port, access, seat or machine`},
		{"placement name", func(m map[string]any) { plan(m)["placement"].(map[string]any)["dir"] = map[string]any{"": "b"} }, `placement.dir name "" is empty`},
		{"files wrong type", func(m map[string]any) { plan(m)["files"] = map[string]any{} }, "assignment JSON does not parse"},
		{"mode number", func(m map[string]any) { entry(m, "files", 0)["mode"] = 640 }, "assignment JSON does not parse"},
		{"placement value object", func(m map[string]any) {
			plan(m)["placement"].(map[string]any)["port"] = map[string]any{"http": map[string]any{"n": 1}}
		}, "assignment JSON does not parse"},
		{"have value list", func(m map[string]any) {
			plan(m)["provides"] = []any{map[string]any{"provision": "x", "have": map[string]any{"url": []any{"a"}}}}
		}, "have.url is a list: a have value is text, a number, true or false"},
		{"provisioning a string", func(m map[string]any) { m["provisioning"] = "x" }, "assignment JSON does not parse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := example(t)
			c.edit(m)
			_, err := ParseAssignment("ace.claude-code", marshal(t, m))
			if err == nil {
				t.Fatalf("accepted; want an error saying %q", c.want)
			}
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *PlanError", err)
			}
			if !strings.HasPrefix(err.Error(), `module "claude-code" on node "ace": `) {
				t.Errorf("error %q does not name the module first", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func FuzzParseAssignment(f *testing.F) {
	f.Add("ace.claude-code", []byte(specExample))
	f.Add("ace.gitea", []byte(`{"node":"ace","module":"gitea","provisioning":{"provides":["gitea-read"]}}`))
	f.Add("ace.x", []byte(`{"node":"ace","module":"x","provisioning":{"files":[{"path":"/a","template":"t"}],"templates":{"ref":"file:///t","digest":"`+digest+`"}}}`))
	f.Add("ace.claude-code", []byte(`{"provisioning":{"placement":{"dir":{"":""}}}}`))
	f.Add("=41.x", []byte(`{}`))
	f.Add("a.b", []byte(`{"node":"a","module":"b","provisioning":null}`))
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		a, err := ParseAssignment(key, data)
		if errors.Is(err, ErrNoPlan) {
			return
		}
		if err != nil {
			var pe *PlanError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *PlanError", err, err)
			}
			return
		}
		toks, err := spec.DecodeKey(key, 2)
		if err != nil || a.Node != toks[0] || a.Module != toks[1] {
			t.Fatalf("accepted %q for key %q", a.Node+"."+a.Module, key)
		}
		for _, fl := range a.Provisioning.Files {
			if fl.Form == "" || fl.OnChange.Action == "" || fl.Path == "" || fl.Path[0] != '/' {
				t.Fatalf("accepted file %+v", fl)
			}
		}
	})
}

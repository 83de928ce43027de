package daemon

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// planFailure is one placeholder that fails its module at plan level: the
// plan (and its templates) make it impossible, and the need it is says so.
type planFailure struct {
	name        string
	plan        nodes.Plan
	templates   map[string]string
	kind, pname string // the failed need
	why         string // what its why (and the report's reason) says
}

// planFailures: every placeholder a plan itself makes impossible (SPEC
// §4.1: a kind this client does not fill; §4.2/§4.4: an item naming a
// secret or consumers, a secret the plan does not declare; §4.5: consumers
// of a provision the module does not provide; §4.6: a bound name that does
// not parse, or a provision and local provisions[] does not list; §4.4: a
// collection collections[] does not list), each named in web's template c.
func planFailures() []planFailure {
	withC := func(c string) map[string]string {
		t := maps.Clone(webTemplates)
		t["c"] = webTemplates["c"] + c // flavour still named: its need stays (SPEC §5.2)
		return t
	}
	withItem := func(item string) map[string]string {
		t := maps.Clone(webTemplates)
		t["i"] = item
		return t
	}
	plan := func(edit func(p *nodes.Plan)) nodes.Plan {
		p := webPlan()
		edit(&p)
		return p
	}
	gitea := func(local string) []nodes.ProvisionSpec {
		return []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: local}}
	}
	return []planFailure{
		{"a secret the plan does not declare", webPlan(), withC("token = ${secret:nope}\n"),
			"secret", "nope", "c:2:9: ${secret:nope} names no secret of the plan"},
		{"consumers of a provision not provided", webPlan(), withC("consumers = ${consumers:gitea-read}\n"),
			"consumers", "gitea-read", "c:2:13: ${consumers:gitea-read}: this module does not provide gitea-read"},
		{"an item naming a secret", plan(func(p *nodes.Plan) {
			p.Secrets = []nodes.SecretSpec{{Name: "api-key"}}
			p.Items = []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}
		}), withItem("export KEY=${secret:api-key}\n"),
			"secret", "api-key", "i:1:12: an item names ${secret:api-key}: an item is kept in a bucket, and no secret is"},
		{"an item naming consumers", plan(func(p *nodes.Plan) {
			p.Provides = []nodes.Offer{{Provision: "gitea-read"}}
			p.Items = []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}
		}), withItem("${consumers:gitea-read}\n"),
			"consumers", "gitea-read", "i:1:1: an item names ${consumers:gitea-read}"},
		{"a bound provision provisions[] does not list", webPlan(), withC("url = ${bound:gitea-read:url}\n"),
			"bound", "gitea-read:url", "${bound:gitea-read:url} names provision gitea-read which provisions[] does not list"},
		{"a bound local provisions[] does not list", plan(func(p *nodes.Plan) { p.Provisions = gitea("") }),
			withC("url = ${bound:gitea-read/two:url}\n"),
			"bound", "gitea-read/two:url", "names provision gitea-read with local two, which provisions[] does not list"},
		{"a bound name with no local where provisions[] has one", plan(func(p *nodes.Plan) { p.Provisions = gitea("two") }),
			withC("url = ${bound:gitea-read:url}\n"),
			"bound", "gitea-read:url", "names provision gitea-read with no local, which provisions[] does not list"},
		{"a bound name that does not parse", plan(func(p *nodes.Plan) { p.Provisions = gitea("") }),
			withC("url = ${bound:gitea-read}\n"),
			"bound", "gitea-read", `${bound:gitea-read}: bound name "gitea-read": want <provision>[/<local>]:<key>`},
		{"a collection collections[] does not list", webPlan(), withC("${collected:motd}\n"),
			"collected", "motd", "${collected:motd} names collection motd which collections[] does not list"},
		{"a collection kind collections[] does not list", webPlan(), withC("${shell:zsh:normal}\n"),
			"shell", "zsh:normal", "names collection shell:zsh:normal which collections[] does not list"},
		{"a kind this client does not fill", webPlan(), withC("x = ${made-up:x}\n"),
			"made-up", "x", `c:2:5: placeholder ${made-up:x}: kind "made-up" is not one this client fills`},
	}
}

// need is a need's value as the needs bucket holds it (SPEC §5.2).
type need struct {
	Node, Module, Kind, Name, State, Why string
}

// A placeholder that fails its module at plan level is a need of the
// needs bucket, failed, its why the reason (SPEC §5.2: a fleet operator,
// and the server's sweep, see which need failed the module); the other
// needs stay as written while the module fails (ModuleView.NeedsUnknown).
// A failed need goes when the plan no longer fails it (another fault, or
// fixed), as the client runs and across a restart.
func TestEachPlaceholderThatFailsItsPlanIsAFailedNeed(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.settle()
	before := m.needValues("ace", "web")
	if len(before) != 4 {
		t.Fatalf("needs of web: %v, want 4", slices.Sorted(maps.Keys(before)))
	}

	failed := func(f planFailure, others map[string]string) {
		t.Helper()
		key := spec.EncodeKey("ace", "web", f.kind, f.pname)
		var n need
		bustest.Eventually(t, 10*time.Second, func() error {
			v, ok := m.get(spec.NeedsBucket, key)
			if !ok {
				return fmt.Errorf("no need %s", key)
			}
			n = need{}
			if err := json.Unmarshal([]byte(v), &n); err != nil {
				return err
			}
			if n.State != "failed" || !contains(n.Why, f.why) {
				return fmt.Errorf("need %s: %s", key, v)
			}
			return nil
		})
		if n != (need{"ace", "web", f.kind, f.pname, "failed", n.Why}) {
			t.Errorf("%s: need %s is %+v", f.name, key, n)
		}
		if r := m.waitState("ace", "web", "failed"); !contains(r["reason"].(string), f.why) {
			t.Errorf("%s: reason %q, want it to say %q", f.name, r["reason"], f.why)
		}
		m.settle()
		got := m.needValues("ace", "web")
		delete(got, key)
		if !maps.Equal(got, others) {
			t.Errorf("%s: the other needs %v, want those written before %v (and no failed need of an earlier plan)",
				f.name, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(others)))
		}
	}
	cases := planFailures()
	for _, f := range cases {
		m.assign("ace", "web", f.plan, f.templates)
		failed(f, before)
	}

	// Fixed as the client runs: its failed need goes, the others follow
	// the plan.
	m.assign("ace", "web", webPlan(), webTemplates)
	m.waitState("ace", "web", "applied")
	m.settle()
	if got := m.needValues("ace", "web"); !maps.Equal(got, before) {
		t.Errorf("fixed: needs %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(before)))
	}

	// Failed and fixed by its plan alone, its templates the same: the
	// failed need turns met again.
	collects := webPlan()
	collects.Collections = []nodes.CollectionSpec{{Name: "motd", Comment: "#"}}
	motd := maps.Clone(webTemplates)
	motd["c"] = "${collected:motd}\n"
	m.assign("ace", "web", collects, motd)
	m.waitState("ace", "web", "applied")
	m.settle()
	collecting := m.needValues("ace", "web")
	met := collecting[spec.EncodeKey("ace", "web", "collected", "motd")]
	if !contains(met, `"state":"met"`) {
		t.Fatalf("collecting motd: needs %v", collecting)
	}
	m.assign("ace", "web", webPlan(), motd)
	notCollecting := maps.Clone(collecting)
	delete(notCollecting, spec.EncodeKey("ace", "web", "collected", "motd"))
	failed(planFailure{name: "collections[] dropped", kind: "collected", pname: "motd",
		why: "c:1:1: ${collected:motd} names collection motd which collections[] does not list"}, notCollecting)
	m.assign("ace", "web", collects, motd)
	m.waitState("ace", "web", "applied")
	m.settle()
	if got := m.needValues("ace", "web"); !maps.Equal(got, collecting) {
		t.Errorf("collecting motd again: needs %v, want %v", got, collecting)
	}

	// Failed again, then fixed while the client is down: the client
	// started again deletes the failed need (it is no template's now).
	// Its template c no longer names motd: that need goes at once.
	m.assign("ace", "web", cases[0].plan, cases[0].templates)
	failed(cases[0], notCollecting)
	stop()
	m.assign("ace", "web", webPlan(), webTemplates)
	m.client("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.settle()
	if got := m.needValues("ace", "web"); !maps.Equal(got, before) {
		t.Errorf("fixed while the client was down: needs %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(before)))
	}
}

// While a module fails at plan level, a need no template of it names any
// more is deleted (SPEC §5.2), also one dropped while the client was down
// (§4.7: its start deletes it), and one still named stays as written,
// though it no longer fails: its state is not known until the module's
// files are wired (outside audits found the first left failed across a
// restart, the second deleted).
func TestAFailingModulesNeedsFollowWhatItsTemplatesName(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	sameState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", sameState)
	m.waitState("ace", "web", "applied")
	m.settle()
	before := m.needValues("ace", "web")
	withC := func(c string) map[string]string {
		t := maps.Clone(webTemplates)
		t["c"] = webTemplates["c"] + c
		return t
	}
	nope, motd := spec.EncodeKey("ace", "web", "secret", "nope"), spec.EncodeKey("ace", "web", "collected", "motd")
	m.assign("ace", "web", webPlan(), withC("a = ${secret:nope}\nb = ${collected:motd}\n"))
	m.waitState("ace", "web", "failed")
	bustest.Eventually(t, 10*time.Second, func() error {
		if v, _ := m.get(spec.NeedsBucket, motd); !contains(v, `"state":"failed"`) {
			return fmt.Errorf("need %s: %q", motd, v)
		}
		return nil
	})
	m.settle()

	stop()
	m.assign("ace", "web", webPlan(), withC("a = ${secret:nope}\n"))
	_, stop = m.startClient("ace", sameState)
	m.waitState("ace", "web", "failed")                  // the last run's report says so already
	bustest.Eventually(t, 10*time.Second, func() error { // the start's clean-up (the client may not have loaded yet)
		if v, ok := m.get(spec.NeedsBucket, motd); ok {
			return fmt.Errorf("need %s still %q", motd, v)
		}
		return nil
	})
	m.settle()
	got := m.needValues("ace", "web")
	if _, ok := got[motd]; ok || !contains(got[nope], `"state":"failed"`) {
		t.Errorf("motd dropped while the client was down: needs %v, want motd gone and nope failed", slices.Sorted(maps.Keys(got)))
	}
	delete(got, nope)
	if !maps.Equal(got, before) {
		t.Errorf("the other needs %v, want them as written %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(before)))
	}

	apiKey := spec.EncodeKey("ace", "web", "secret", "api-key")
	item := webPlan()
	item.Secrets = []nodes.SecretSpec{{Name: "api-key"}}
	item.Items = []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}
	tmpls := withC("k = ${secret:api-key}\n")
	tmpls["i"] = "export K=${secret:api-key}\n"
	m.assign("ace", "web", item, tmpls)
	bustest.Eventually(t, 10*time.Second, func() error {
		if v, _ := m.get(spec.NeedsBucket, apiKey); !contains(v, `"state":"failed"`) {
			return fmt.Errorf("need %s: %q", apiKey, v)
		}
		return nil
	})
	noItem := webPlan()
	noItem.Secrets = item.Secrets
	m.assign("ace", "web", noItem, withC("k = ${secret:api-key}\nx = ${secret:nope}\n"))
	bustest.Eventually(t, 10*time.Second, func() error {
		if v, _ := m.get(spec.NeedsBucket, nope); !contains(v, `"state":"failed"`) {
			return fmt.Errorf("need %s: %q", nope, v)
		}
		return nil
	})
	m.settle()
	if v, ok := m.get(spec.NeedsBucket, apiKey); !ok {
		t.Errorf("need %s deleted while template c still names it, want it as written (%q)", apiKey, v)
	}
	stop()
}

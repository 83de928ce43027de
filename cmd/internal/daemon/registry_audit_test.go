package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An outside tester's pass on the registry as the client reads it (SPEC
// §6.1: "The client reads where each kind lives from here; a kind the
// registry does not name is waited for").

// allKinds is module "all" on ace: one file per source of values (config,
// placement, the vault, a provider's binding, a collection) and a secret
// written to its own path, every value there but the registry's word.
func (m *mesh) allKinds() {
	m.t.Helper()
	m.put(spec.ConfigBucket, "ace.all.model", "opus")
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.all.gitea-read", `{"state":"bound","values":{"as":"all-ace"}}`)
	m.assign("ace", "all", nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/all/cfg", Template: "cfg"},
			{Path: "/etc/all/place", Template: "place"},
			{Path: "/etc/all/sec", Template: "sec"},
			{Path: "/etc/all/bound", Template: "bound"},
			{Path: "/etc/all/coll", Template: "coll"},
		},
		Placement:   map[string]map[string]string{"dir": {"state": "/var/lib/all"}, "port": {"http": "80"}},
		Secrets:     []nodes.SecretSpec{{Name: "api-key", Path: "/etc/all/api-key"}},
		Provisions:  []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
		Collections: []nodes.CollectionSpec{{Name: zshColl, Comment: "#"}},
	}, map[string]string{
		"cfg": "model = ${config:model}\n", "place": "${dir:state} ${port:http}\n", "sec": "key = ${secret:api-key}\n",
		"bound": "as = ${bound:gitea-read:as}\n", "coll": "${shell:zsh:normal}",
	})
}

// allKindNeeds are module all's needs, by kind: name.
var allKindNeeds = map[string]string{"config": "model", "dir": "state", "port": "http", "secret": "api-key",
	"bound": "gitea-read:as", "shell": "zsh:normal"}

// waitAllSay waits for every need of module all to wait saying why
// (with kind put in for %s), in its report's waiting, in its needs' keys
// and in explain's roots (the registry's key of the kind).
func (m *mesh) waitAllSay(ctl, why string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "all")
		if r["state"] != "waiting" {
			return fmt.Errorf("report %v", r)
		}
		said := map[string]string{}
		for _, w := range r["waiting"].([]any) {
			w := w.(map[string]any)
			said[fmt.Sprint(w["kind"])+":"+fmt.Sprint(w["name"])] = fmt.Sprint(w["why"])
		}
		for kind, name := range allKindNeeds {
			want := strings.ReplaceAll(why, "%s", kind)
			if got := said[kind+":"+name]; !strings.Contains(got, want) {
				return fmt.Errorf("report: ${%s:%s} waits %q, want %q (waiting %v)", kind, name, got, want, said)
			}
			v, ok := m.get(spec.NeedsBucket, spec.EncodeKey("ace", "all", kind, name))
			var need map[string]any
			if !ok || json.Unmarshal([]byte(v), &need) != nil || need["state"] != "waiting" || !strings.Contains(fmt.Sprint(need["why"]), want) {
				return fmt.Errorf("need ${%s:%s}: %s, want waiting %q", kind, name, v, want)
			}
		}
		e, text, err := explainTry(ctl, "all")
		if err != nil {
			return err
		}
		for kind := range allKindNeeds {
			found := false
			for _, s := range roots(e) {
				found = found || (s.Bucket == spec.RegistryBucket && s.Key == kind && strings.Contains(s.Why, strings.ReplaceAll(why, "%s", kind)))
			}
			if !found {
				return fmt.Errorf("explain does not name the registry's key %s as the root:\n%s", kind, text)
			}
		}
		return nil
	})
	for _, p := range []string{"/etc/all/cfg", "/etc/all/place", "/etc/all/sec", "/etc/all/bound", "/etc/all/coll", "/etc/all/api-key"} {
		if got, _, err := m.file(p); err == nil {
			m.t.Errorf("%s written (%q) while the registry does not answer", p, got)
		}
	}
}

// A client started before the server: no registry bucket, then the server
// makes it (empty), then puts its entries. Every kind waits, saying why at
// each step in the report, the needs and explain, and the module fills
// once the entries come, without a restart.
func TestAClientStartedBeforeTheServerWaitsOnEveryKindUntilTheRegistryNamesIt(t *testing.T) {
	m := newMesh(t)
	m.allKinds()
	v := m.devVault()
	v.Set(t.Context(), spec.OwnSecretName("all", "api-key"), []byte("k-1"))
	if err := m.js.DeleteKeyValue(t.Context(), spec.RegistryBucket); err != nil {
		t.Fatal(err)
	}
	ctl := ctlSock(t)
	m.client("ace", withControl(ctl))
	m.waitAllSay(ctl, "bucket "+spec.RegistryBucket+" does not exist yet")

	if _, err := m.js.CreateKeyValue(t.Context(), jetstream.KeyValueConfig{Bucket: spec.RegistryBucket}); err != nil {
		t.Fatal(err)
	}
	m.waitAllSay(ctl, "the registry ("+spec.RegistryBucket+") does not name kind %s")

	if _, _, err := srv.PublishRegistry(t.Context(), m.kv(spec.RegistryBucket), srv.Registry()); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/all/cfg", "model = opus\n")
	m.waitFile("/etc/all/place", "/var/lib/all 80\n")
	m.waitFile("/etc/all/sec", "key = k-1\n")
	m.waitFile("/etc/all/api-key", "k-1")
	m.waitFile("/etc/all/bound", "as = all-ace\n")
	m.waitFile("/etc/all/coll", "")
	m.waitState("ace", "all", "applied")
}

// A registry entry deleted while the client runs (config's, a placement
// kind's, secret's, bound's): the needs of that kind wait again, saying
// the registry does not name the kind; the files already filled stay on
// disk as they are (nothing of a waiting module is written, and no
// refill takes them away); the entry put back, the module is applied
// again.
func TestARegistryEntryDeletedWhileRunningMakesItsKindWaitAndKeepsTheFiles(t *testing.T) {
	m := newMesh(t)
	m.allKinds()
	v := m.devVault()
	v.Set(t.Context(), spec.OwnSecretName("all", "api-key"), []byte("k-1"))
	m.assign("ace", "plain", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/plain/a", Template: "a"}}},
		map[string]string{"a": "plain\n"}) // refilled at each tick, whatever the registry
	m.client("ace", func(c *Config) { c.Refill = 200 * time.Millisecond })
	m.waitState("ace", "all", "applied")
	files := map[string]string{"/etc/all/cfg": "model = opus\n", "/etc/all/place": "/var/lib/all 80\n",
		"/etc/all/sec": "key = k-1\n", "/etc/all/api-key": "k-1", "/etc/all/bound": "as = all-ace\n", "/etc/all/coll": ""}
	for p, want := range files {
		m.waitFile(p, want)
	}
	for _, kind := range []string{"config", "dir", "secret", "bound"} {
		entry, _ := m.get(spec.RegistryBucket, kind)
		m.del(spec.RegistryBucket, kind)
		m.waitWaiting("ace", "all", `"kind":"`+kind+`"`, "the registry ("+spec.RegistryBucket+") does not name kind "+kind)
		from := m.fills.count()
		bustest.Eventually(t, 10*time.Second, func() error { // a few refill ticks (plain's)
			if n := m.fills.count(); n < from+3 {
				return fmt.Errorf("%d fills since", n-from)
			}
			return nil
		})
		for p, want := range files {
			if got, _, err := m.file(p); err != nil || got != want {
				t.Errorf("registry without %s: %s holds %q (%v), want %q kept", kind, p, got, err, want)
			}
		}
		if r, _ := m.report("ace", "all"); r["state"] != "waiting" {
			t.Errorf("registry without %s: report %v", kind, r)
		}
		m.put(spec.RegistryBucket, kind, entry)
		m.waitState("ace", "all", "applied")
	}
}

// A registry entry out of shape (not JSON, a field of the wrong type) or
// naming another bucket: the needs of its kind wait, saying so in the
// report, and no other kind is touched (a module reading only placement
// stays applied, nothing of it sent again). Put back, the kind fills.
func TestARegistryEntryOutOfShapeOrMovedIsSaidAndTouchesNoOtherKind(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.assign("ace", "placed", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/placed/a", Template: "a"}},
		Placement: map[string]map[string]string{"dir": {"state": "/srv"}}}, map[string]string{"a": "${dir:state}\n"})
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "placed", "applied")
	m.waitFile("/etc/placed/a", "/srv\n")
	entry, _ := m.get(spec.RegistryBucket, "config")
	for _, c := range []struct{ value, says string }{
		{"not json", "the registry's entry for kind config is not a JSON object"},
		{`{"kind":"config","owner":"mesh-config","bucket":5}`, "the registry's entry for kind config does not parse"},
		{`["config"]`, "the registry's entry for kind config is not a JSON object"},
		{strings.Replace(entry, spec.ConfigBucket, "other-config", 1),
			"the registry says kind config lives in bucket other-config; this client reads it from " + spec.ConfigBucket},
	} {
		from := m.fills.count()
		placed := m.revision(spec.AppliedBucket, "ace.placed")
		m.put(spec.RegistryBucket, "config", c.value)
		m.waitWaiting("ace", "web", `"kind":"config"`, c.says)
		if r, _ := m.report("ace", "web"); strings.Contains(fmt.Sprint(r["waiting"]), `port`) {
			t.Errorf("registry's config %q: web's port waits too: %v", c.value, r["waiting"])
		}
		if got := m.fills.since(from); len(got) != 0 {
			t.Errorf("registry's config %q: files sent %v", c.value, got)
		}
		if rev := m.revision(spec.AppliedBucket, "ace.placed"); rev != placed {
			t.Errorf("registry's config %q: placed's report written again", c.value)
		}
		m.put(spec.RegistryBucket, "config", entry)
		m.waitState("ace", "web", "applied")
	}
}

// A kind the registry names but this client does not fill still fails
// the module naming it (SPEC §4.1), whatever the registry says.
func TestAKindTheRegistryNamesButTheClientDoesNotFillFailsTheModule(t *testing.T) {
	m := newMesh(t)
	m.put(spec.RegistryBucket, "foo", `{"kind":"foo","owner":"mesh-foo","bucket":"mesh-foo_values","key":"<node>.<module>.<key>"}`)
	m.assign("ace", "odd", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/odd/a", Template: "a"}}},
		map[string]string{"a": "x = ${foo:bar}\n"})
	m.client("ace")
	r := m.waitState("ace", "odd", "failed")
	if why := fmt.Sprint(r["reason"]); !strings.Contains(why, "foo") || !strings.Contains(why, "not one this client fills") {
		t.Errorf("reason %q does not say kind foo is not filled", why)
	}
}

// The client started on a bus where the server never ran (the lab's
// buckets alone): explain says each kind waits for the registry bucket,
// and the client has made no bucket; the real server started later makes
// its four buckets and the registry, and the client fills without a
// restart.
func TestAClientStartedBeforeTheRealServerFillsOnceItRuns(t *testing.T) {
	m := newBareMesh(t)
	for _, b := range []string{spec.AssignmentsBucket, spec.ConfigBucket} {
		m.bucket(b)
	}
	m.webModule()
	lab := m.streams()
	ctl := ctlSock(t)
	m.client("ace", withControl(ctl))
	bustest.Eventually(t, 10*time.Second, func() error {
		e, text, err := explainTry(ctl, "web")
		if err != nil {
			return err
		}
		kinds := map[string]bool{}
		for _, s := range roots(e) {
			if s.Bucket == spec.RegistryBucket && s.Why == "bucket "+spec.RegistryBucket+" does not exist yet" {
				kinds[s.Key] = true
			}
		}
		if !kinds["config"] || !kinds["port"] || !kinds["dir"] {
			return fmt.Errorf("explain does not say config, port and dir wait for the registry bucket:\n%s", text)
		}
		return nil
	})
	if got := m.streams(); !slices.Equal(got, lab) {
		t.Fatalf("streams %q, want the lab's alone %q", got, lab)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(ctx, srv.Config{NATSURL: m.s.ClientURL(), RegistryEvery: time.Hour, Log: zerolog.New(m.logs)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	m.waitState("ace", "web", "applied")
	want := append(append([]string(nil), lab...), "KV_"+spec.AppliedBucket, "KV_"+spec.CollectBucket,
		"KV_"+spec.NeedsBucket, "KV_"+spec.RegistryBucket)
	slices.Sort(want)
	if got := m.streams(); !slices.Equal(got, want) {
		t.Errorf("streams %q, want the lab's and the server's %q", got, want)
	}
}

package daemon

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// saidOf records, from now on, every prov.applied event of node.module
// and every put to the needs bucket under node.module; the returned
// function lists them ("event …", "need <key> …") in the order seen.
func (m *mesh) saidOf(node, module string) func() []string {
	m.t.Helper()
	var mu sync.Mutex
	var said []string
	add := func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() }
	sub, err := m.nc.Subscribe(spec.AppliedSubject(node, module), func(msg *nats.Msg) {
		add("event " + string(msg.Data))
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { sub.Unsubscribe() })
	ctx, cancel := context.WithCancel(context.Background())
	m.t.Cleanup(cancel)
	w, err := m.kv(spec.NeedsBucket).Watch(ctx, spec.EncodeKey(node, module)+".>", jetstream.UpdatesOnly())
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { w.Stop() })
	go func() {
		for e := range w.Updates() {
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				add("need " + e.Key() + " " + string(e.Value()))
			}
		}
	}()
	m.nc.Flush()
	return func() []string {
		m.nc.Flush()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), said...)
	}
}

// noneSays fails t for each thing said that holds what.
func noneSays(t *testing.T, said []string, what string) {
	t.Helper()
	for _, s := range said {
		if strings.Contains(s, what) {
			t.Errorf("said before the provider's bucket was read: %s", s)
		}
	}
}

// A plan that comes to read a provider's bucket the client did not watch
// (its module applied, gitea_bound holding the entry all along) waits for
// the new watch's first read before its module is said anything: no
// report, event or need says the entry is "not written yet" while it is
// written (SPEC §4.6, §5.2, §5.3), as a cold start holds its first fill
// for each provider bucket's first look (firstlooks.go). The module ends
// applied with the bound value in its file.
func TestANewlyReadProviderBucketIsReadBeforeTheModuleIsSaidToWait(t *testing.T) {
	m := newMesh(t)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}}},
		map[string]string{"forge": "static\n"})
	m.client("ace")
	m.waitFile("/etc/cc/forge.toml", "static\n")
	m.waitState("ace", "cc", "applied")
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge"}}`)
	m.settle()

	said := m.saidOf("ace", "cc")
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"forge": "url = ${bound:gitea-read:url}\n"})
	m.waitFile("/etc/cc/forge.toml", "url = https://forge\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	got := said()
	noneSays(t, got, "not written yet")
	boundMet(t, got)
	if !containsAny(got, `"state":"applied"`) {
		t.Errorf("no applied event for the new plan: %q", got)
	}
}

// The same for a module newly assigned at runtime whose plan reads a
// provider's bucket no module of the node read until then: its need is
// first put met, and no report says the entry is not written.
func TestANewModuleReadingANewProviderBucketIsNotSaidToWaitForAWrittenEntry(t *testing.T) {
	m := newMesh(t)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/web.conf", Template: "w"}}},
		map[string]string{"w": "web\n"})
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge"}}`)
	m.settle()

	said := m.saidOf("ace", "cc")
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/forge.toml", Template: "forge"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"forge": "url = ${bound:gitea-read:url}\n"})
	m.waitFile("/etc/cc/forge.toml", "url = https://forge\n")
	m.waitState("ace", "cc", "applied")
	m.settle()
	got := said()
	noneSays(t, got, "not written yet")
	boundMet(t, got)
}

// boundMet fails t unless the bound need was put, and put met every time.
func boundMet(t *testing.T, said []string) {
	t.Helper()
	n := 0
	for _, s := range said {
		if strings.HasPrefix(s, "need ace.cc.bound.") {
			if n++; !strings.Contains(s, `"state":"met"`) {
				t.Errorf("the bound need was put not met: %s", s)
			}
		}
	}
	if n == 0 {
		t.Errorf("the bound need was never put: %q", said)
	}
}

func containsAny(said []string, what string) bool {
	for _, s := range said {
		if strings.Contains(s, what) {
			return true
		}
	}
	return false
}

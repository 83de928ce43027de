package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// fillOf is the last request's entry for path since request from.
func (m *mesh) fillOf(from int, path string) (fill.File, bool) {
	m.fills.mu.Lock()
	defer m.fills.mu.Unlock()
	var out fill.File
	ok := false
	for _, r := range m.fills.reqs[min(from, len(m.fills.reqs)):] {
		for _, f := range r.Files {
			if f.Path == path {
				out, ok = f, true
			}
		}
	}
	return out, ok
}

// A secret with a path is sent as an owned file, mode 0600 when the plan's
// is not stricter (0640 is not), and restarts nothing unless its on_change
// says so (SPEC §3).
func TestASecretsOwnFileIsSentOwned0600WithNoProgramByDefault(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "vs", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "k", Path: "/etc/vs/k", Mode: "0640"}}}, nil)
	v := m.devVault()
	v.Set(t.Context(), "own/vs/k", []byte("x"))
	m.client("ace")
	m.waitFile("/etc/vs/k", "x")
	f, _ := m.fillOf(0, "/etc/vs/k")
	if f.Form != "owned" || f.Mode != "0600" || f.OnChange.Action != "" && f.OnChange.Action != "none" {
		t.Fatalf("secret file sent as %+v", f)
	}
}

// A consumer's plan that changes but binds the same (SPEC §4.5) asks the
// vault nothing and sends the provider no file.
func TestAConsumersPlanChangeThatBindsTheSameCostsTheProviderNothing(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-secret"))
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	before, from := askTotals(v), m.fills.count()
	p := consumerPlan()
	p.Placement = map[string]map[string]string{"port": {"x": "1"}}
	p.Files = []nodes.FileSpec{{Path: "/etc/cc/x", Template: "x"}}
	m.assign("g14", "claude-code", p, map[string]string{"x": "${port:x}"})
	time.Sleep(300 * time.Millisecond)
	m.settle()
	if after := askTotals(v); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("asks moved: %v → %v", before, after)
	}
	if got := m.fills.since(from); len(got) != 0 {
		t.Fatalf("sent %v on a consumer change that binds the same", got)
	}
}

// A secret-changed naming a secret no file here reads (another module's,
// another node's, a pair this node provides nothing for) asks nothing
// (SPEC §4.2).
func TestASecretChangedNamingNoSecretReadHereAsksNothing(t *testing.T) {
	m, v := appMesh(t, ownApp, provApp)
	m.client("ace")
	m.waitState("ace", "app", "applied")
	m.settle()
	n := len(v.Asks())
	for _, name := range []string{"own/other/api-key", "provision/gitea/gitea-read/g14/app", "pair/gitea/gitea-read/ace/app", "own/app/api-key-2"} {
		m.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"`+name+`"}`))
	}
	m.nc.Flush()
	time.Sleep(500 * time.Millisecond)
	m.settle()
	if got := len(v.Asks()); got != n {
		t.Fatalf("asked %d more: %v", got-n, v.Asks()[n:])
	}
	// The same event naming a secret read here asks it: the events above
	// did reach the client.
	m.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"`+ownApp+`"}`))
	bustest.Eventually(t, 5*time.Second, func() error {
		if got := v.AskCount(ownApp); got != 2 {
			return fmt.Errorf("%s asked %d times, want twice", ownApp, got)
		}
		return nil
	})
}

// The consumers list is SPEC §4.5's JSON, byte for byte, for a provision
// offered by an offer object as by a name; a value is a JSON string
// whatever it holds.
func TestAConsumersListIsTheSpecsJSONForAnOfferObject(t *testing.T) {
	m := newMesh(t)
	p := giteaPlan()
	p.Provides = []nodes.Offer{{Provision: "gitea-read", Have: map[string]string{"url": "u"}}, helperOffer}
	m.assign("ace", "gitea", p, giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-<secret>&"))
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	text, _, _ := m.file("/etc/gitea/consumers.json")
	want := `[{"consumer":"g14","module":"claude-code","local":"","credential":"pair/gitea/gitea-read/g14/claude-code","value":"cc-\u003csecret\u003e\u0026"}]`
	if text != want {
		t.Errorf("file %s", text)
	}
}

// A provider no consumer is bound to writes the empty list, not null.
func TestAProviderWithNoConsumersWritesAnEmptyList(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.devVault()
	m.client("ace")
	m.waitFile("/etc/gitea/consumers.json", "[]")
}

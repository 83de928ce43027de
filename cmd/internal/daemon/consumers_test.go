package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// giteaPlan is a provider of gitea-read with a consumers file and a plain one.
func giteaPlan() nodes.Plan {
	return nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/gitea/consumers.json", Template: "consumers", Mode: "0644"},
			{Path: "/etc/gitea/app.ini", Template: "ini"},
		},
		Placement: map[string]map[string]string{"port": {"http": "3000"}},
		Provides:  []nodes.Offer{{Provision: "gitea-read"}},
	}
}

var giteaTemplates = map[string]string{
	"consumers": "${consumers:gitea-read}",
	"ini":       "port = ${port:http}\n",
}

// consumerPlan binds a consumer to gitea for gitea-read (one entry per local).
func consumerPlan(locals ...string) nodes.Plan {
	if len(locals) == 0 {
		locals = []string{""}
	}
	var p nodes.Plan
	for _, l := range locals {
		p.Provisions = append(p.Provisions, nodes.ProvisionSpec{Provision: "gitea-read", Provider: "gitea", Credential: "token", Local: l})
	}
	return p
}

func pair(node, module, local string) string {
	return spec.PairSecretName("gitea", "gitea-read", node, module, local)
}

type consumerEntry struct {
	Consumer   string `json:"consumer"`
	Module     string `json:"module"`
	Local      string `json:"local"`
	Credential string `json:"credential"`
	Value      string `json:"value"`
}

// consumersIn reads the consumers file as the credentials it lists, in order.
func (m *mesh) consumersIn(path string) ([]consumerEntry, error) {
	text, _, err := m.file(path)
	if err != nil {
		return nil, err
	}
	var list []consumerEntry
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return nil, fmt.Errorf("%s: %w: %q", path, err, text)
	}
	return list, nil
}

func (m *mesh) waitConsumers(path string, want ...string) []consumerEntry {
	m.t.Helper()
	var list []consumerEntry
	bustest.Eventually(m.t, 10*time.Second, func() error {
		var err error
		if list, err = m.consumersIn(path); err != nil {
			return err
		}
		got := make([]string, len(list))
		for i, e := range list {
			got[i] = e.Credential
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("consumers %v, want %v", got, want)
		}
		return nil
	})
	return list
}

func askTotals(v *devvault.Vault) map[string]int {
	out := map[string]int{}
	for _, a := range v.Asks() {
		out[a.Secret]++
	}
	return out
}

func TestConsumersListBindingsInKeyThenProvisionsOrderAndFollowBindUnbind(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	m.assign("g14", "aider", consumerPlan(), nil) // its credential is not in the vault
	m.assign("ace", "ci", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-secret"))
	v.Set(t.Context(), pair("ace", "ci", ""), []byte("ci-secret"))
	// Set now: a secret-changed for it racing its first ask would ask twice.
	v.Set(t.Context(), pair("g14", "bot", ""), []byte("bot-secret"))
	// A long backoff: the absent credential is not asked again during the test.
	m.client("ace", func(c *Config) { c.BackoffMin, c.BackoffMax = time.Minute, time.Minute })

	list := m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "ci", ""), pair("g14", "claude-code", ""))
	want := []consumerEntry{
		{Consumer: "ace", Module: "ci", Local: "", Credential: pair("ace", "ci", ""), Value: "ci-secret"},
		{Consumer: "g14", Module: "claude-code", Local: "", Credential: pair("g14", "claude-code", ""), Value: "cc-secret"},
	}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Fatalf("consumers %+v, want %+v", list, want)
	}
	if got := mode(t, m, "/etc/gitea/consumers.json"); got != "0600" {
		t.Errorf("consumers file mode %s, want 0600", got)
	}
	for _, a := range v.Asks() { // asked in the client's own name, for the provider module
		if a.Subject != "mesh-vault.get.provisioner.ace" || a.Node != "ace" || a.Module != "gitea" {
			t.Errorf("ask of %s on %s said node %q, module %q", a.Secret, a.Subject, a.Node, a.Module)
		}
	}
	r := m.waitState("ace", "gitea", "applied")
	if d := reportDigests(r)["/etc/gitea/consumers.json"]; !contains(d, "hmac-sha256:") {
		t.Errorf("consumers file digest %q", d)
	}
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !contains(m.logs.String(), pair("g14", "aider", "")) {
			return fmt.Errorf("the consumer left out is not named in the log")
		}
		return nil
	})
	m.settle()
	before, from := askTotals(v), m.fills.count()

	// A fourth consumer: exactly one new ask, only the consumers file sent.
	m.assign("g14", "bot", consumerPlan(), nil)
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "ci", ""), pair("g14", "bot", ""), pair("g14", "claude-code", ""))
	m.settle()
	after := askTotals(v)
	for name, n := range after {
		delta := n - before[name]
		wantDelta := 0
		if name == pair("g14", "bot", "") {
			wantDelta = 1
		}
		if delta != wantDelta {
			t.Errorf("%s asked %d more times, want %d", name, delta, wantDelta)
		}
	}
	if got := m.fills.since(from); len(got) != 1 || got[0] != "/etc/gitea/consumers.json" {
		t.Fatalf("sent %v, want only the consumers file", got)
	}

	// Unbound: gone from the list, nothing asked.
	before, from = askTotals(v), m.fills.count()
	m.del(spec.AssignmentsBucket, "g14.bot")
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "ci", ""), pair("g14", "claude-code", ""))
	m.settle()
	if after := askTotals(v); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("asks moved on an unbinding: %v → %v", before, after)
	}
	if got := m.fills.since(from); len(got) != 1 || got[0] != "/etc/gitea/consumers.json" {
		t.Fatalf("sent %v, want only the consumers file", got)
	}

	// The missing credential arrives: the consumer joins.
	v.Set(t.Context(), pair("g14", "aider", ""), []byte("aider-secret"))
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "ci", ""), pair("g14", "aider", ""), pair("g14", "claude-code", ""))
}

func TestConsumersWithinAPlanFollowItsProvisionsOrderAndARefusalLeavesOneOut(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan("zeta", "alpha", ""), nil)
	v := m.devVault()
	for _, l := range []string{"zeta", "alpha", ""} {
		v.Set(t.Context(), pair("g14", "claude-code", l), []byte("v-"+l))
	}
	v.Refuse(pair("g14", "claude-code", "alpha"), "alpha is revoked")
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", "zeta"), pair("g14", "claude-code", ""))
	m.waitState("ace", "gitea", "applied")
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !contains(m.logs.String(), "alpha is revoked") {
			return fmt.Errorf("the refused consumer is not said in the log")
		}
		return nil
	})
}

func TestAModuleNamingConsumersItDoesNotProvideFails(t *testing.T) {
	m := newMesh(t)
	p := giteaPlan()
	p.Provides = nil
	m.assign("ace", "gitea", p, giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("cc-secret"))
	m.client("ace")
	r := m.waitState("ace", "gitea", "failed")
	if !contains(fmt.Sprint(r["reason"]), "does not provide gitea-read") {
		t.Fatalf("reason %q", r["reason"])
	}
	m.settle()
	if len(v.Asks()) != 0 {
		t.Fatalf("the vault was asked %v", v.Asks())
	}
}

// BenchmarkOneConsumerBinding: a provider with 1,000 consumers; one more
// binding, timed from the assignment's put to the fill request holding it.
// vault-asks/op is the vault asks that binding cost (target 1).
func BenchmarkOneConsumerBinding(b *testing.B) {
	const consumers = 1000
	m := newMesh(b)
	v := m.devVault()
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	for i := range consumers {
		mod := fmt.Sprintf("c%04d", i)
		v.Set(b.Context(), pair("g14", mod, ""), []byte("s-"+mod))
		m.assign("g14", mod, consumerPlan(), nil)
	}
	m.client("ace")
	// waitN waits for a fill request whose consumers file lists n.
	next := 0
	waitN := func(n int) {
		bustest.EventuallyEvery(b, 60*time.Second, 100*time.Microsecond, func() error {
			if m.fills.consumersSent(&next, "/etc/gitea/consumers.json") != n {
				return fmt.Errorf("no fill request listed %d consumers", n)
			}
			return nil
		})
	}
	waitN(consumers)
	asks := 0
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ { // set now: a secret-changed racing the first ask would ask twice
		mod := fmt.Sprintf("n%06d", i)
		v.Set(b.Context(), pair("g14", mod, ""), []byte("s-"+mod))
	}
	b.StartTimer()
	for i := 0; i < b.N; i++ {
		mod := fmt.Sprintf("n%06d", i)
		before := len(v.Asks())
		m.assign("g14", mod, consumerPlan(), nil)
		waitN(consumers + i + 1)
		asks += len(v.Asks()) - before
	}
	b.StopTimer()
	b.ReportMetric(float64(asks)/float64(b.N), "vault-asks/op")
}

// consumersSent reads the fill requests from *next on and returns how many
// consumers the last one sending path listed (-1: none sent it).
func (f *fillLog) consumersSent(next *int, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := -1
	for ; *next < len(f.reqs); *next++ {
		for _, x := range f.reqs[*next].Files {
			if x.Path != path {
				continue
			}
			var list []json.RawMessage
			if json.Unmarshal(x.Content, &list) == nil {
				n = len(list)
			}
		}
	}
	return n
}

// SPEC §3: a file holding ${consumers:…} (or a secret) is 0600 "whatever the
// plan says": a stricter plan mode too (only a secret written to its own
// path keeps a stricter one).
func TestAConsumersFileIs0600WhateverThePlanSays(t *testing.T) {
	m := newMesh(t)
	p := giteaPlan()
	p.Files[0].Mode = "0400"
	p.Files = append(p.Files, nodes.FileSpec{Path: "/etc/gitea/c2.json", Template: "consumers", Mode: "0660"})
	m.assign("ace", "gitea", p, giteaTemplates)
	m.client("ace")
	m.waitFile("/etc/gitea/consumers.json", "[]")
	m.waitFile("/etc/gitea/c2.json", "[]")
	for _, f := range []string{"/etc/gitea/consumers.json", "/etc/gitea/c2.json"} {
		if got := mode(t, m, f); got != "0600" {
			t.Errorf("%s mode %s, want 0600", f, got)
		}
	}
}

package nodes

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// providerOfTwo is gitea on ace with a consumers file, bound by cc on
// ace and on g14, their credentials asked.
func providerOfTwo(t *testing.T) *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", Plan{
		Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}))
	m.SetArchive("gitea", digestA, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	for _, node := range []string{"ace", "g14"} {
		m.Put(spec.AssignmentsBucket, node+".cc", planJSON(node, "cc", Plan{
			Provisions: []ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}}))
	}
	if w := m.TakeNewSecrets(); len(w) != 2 {
		t.Fatalf("asked %v", w)
	}
	return m
}

func consumerValues(t *testing.T, m *NodeGraph) []string {
	t.Helper()
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	if f.State != graph.Ready {
		return nil
	}
	var list []map[string]string
	if err := json.Unmarshal(f.Value.mustBytes(), &list); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range list {
		out = append(out, e["value"])
	}
	return out
}

// A consumers list's first value waits for the vault's own answer to each
// credential; a credential the vault does not answer holds it
// FirstConsumersWait at most, then the list is made of those answered.
func TestAConsumersListsFirstValueWaitsForEveryAnswerOrFiveSeconds(t *testing.T) {
	m := providerOfTwo(t)
	now := time.Now()
	m.g.Now = func() time.Time { return now }
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("s-ace"), now)
	m.SecretWaiting("pair/gitea/gitea-read/g14/cc", "vault: no answer within 5s", now)
	m.Stabilize()
	if v := consumerValues(t, m); v != nil || !m.ConsumersHeld() {
		t.Fatalf("the list was filled before the vault answered for g14: %v", v)
	}
	m.ReleaseDue(now.Add(time.Second))
	m.Stabilize()
	if v := consumerValues(t, m); v != nil {
		t.Fatalf("released after 1s: %v", v)
	}
	now = now.Add(FirstConsumersWait)
	m.ReleaseDue(now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "s-ace" || m.ConsumersHeld() {
		t.Fatalf("after 5s the list is %v (held %v), want s-ace alone", v, m.ConsumersHeld())
	}
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("s-g14"), now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 2 {
		t.Fatalf("a credential answered later is not listed at once: %v", v)
	}
}

// The FirstConsumersWait a list's first value may wait runs from the
// vault's first answer, not from the list's first look: a client started
// again asks while its first fill waits for the answers (up to 5 s), and a
// provider with one credential the vault left silent was then held 5 s
// more from the first look, reported waiting with no files at every
// restart (an outside audit). Answered 6 s before its first look, the
// list is made at once of those the vault answered.
func TestAConsumersListsFirstWaitRunsFromTheVaultsFirstAnswer(t *testing.T) {
	m := providerOfTwo(t)
	now := time.Now()
	m.g.Now = func() time.Time { return now }
	asked := now.Add(-6 * time.Second)
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("s-ace"), asked)
	m.SecretWaiting("pair/gitea/gitea-read/g14/cc", "vault: no answer within 5s", asked)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "s-ace" || m.ConsumersHeld() {
		t.Fatalf("the list is %v (held %v), want s-ace alone at its first look", v, m.ConsumersHeld())
	}
}

// After the bus came back, a list keeps its value until every credential
// it reads is answered again (or the round's time is up), then moves once.
func TestAConsumersListMovesOnceForTheReaskRound(t *testing.T) {
	m := providerOfTwo(t)
	now := time.Now()
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("a1"), now)
	m.SecretAbsent("pair/gitea/gitea-read/g14/cc", "absent", now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "a1" {
		t.Fatalf("first value %v", v)
	}
	m.ReaskRound(now.Add(time.Minute))
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("a2"), now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "a1" {
		t.Fatalf("moved before every credential was answered again: %v", v)
	}
	m.SetSecret("pair/gitea/gitea-read/g14/cc", []byte("g2"), now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 2 || v[0] != "a2" || v[1] != "g2" || m.ConsumersHeld() {
		t.Fatalf("after the round the list is %v", v)
	}
	m.ReaskRound(now.Add(time.Minute))
	m.SetSecret("pair/gitea/gitea-read/ace/cc", []byte("a3"), now)
	m.Stabilize()
	m.ReleaseDue(now.Add(time.Minute))
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 2 || v[0] != "a3" || m.ConsumersHeld() {
		t.Fatalf("the round's time up did not let the list move: %v", v)
	}
}

// A consumers list whose credentials the vault has answered none of (asks
// made, no reply: the vault down) waits with no time limit, saying so by
// the credentials' names; once the vault answers one, the list waits
// FirstConsumersWait at most for the others, counted from that answer,
// then is made of those it holds.
func TestAConsumersListWaitsWhileTheVaultAnswersNoneOfItsCredentials(t *testing.T) {
	m := providerOfTwo(t)
	now := time.Now()
	m.g.Now = func() time.Time { return now }
	ace, g14 := "pair/gitea/gitea-read/ace/cc", "pair/gitea/gitea-read/g14/cc"
	m.SecretWaiting(ace, "vault: no answer within 5s", now)
	m.Stabilize()
	first := file(m, "gitea", "/etc/gitea/consumers.json").Why
	m.SecretWaiting(g14, "vault: no answer within 5s", now)
	m.Stabilize()
	if why := file(m, "gitea", "/etc/gitea/consumers.json").Why; why != first {
		t.Errorf("the why moved as the unanswered asks came back: %q, then %q", first, why)
	}
	now = now.Add(time.Hour)
	m.ReleaseDue(now)
	m.Stabilize()
	if v := consumerValues(t, m); v != nil || m.ConsumersHeld() {
		t.Fatalf("the list was filled (%v) or timed (held %v) with the vault answering none", v, m.ConsumersHeld())
	}
	f := file(m, "gitea", "/etc/gitea/consumers.json")
	if f.State != graph.Waiting || !strings.Contains(f.Why, "the vault has given no answer") ||
		!strings.Contains(f.Why, ace) || !strings.Contains(f.Why, g14) {
		t.Fatalf("the file is %v: %q", f.State, f.Why)
	}

	m.SecretAbsent(g14, "vault: absent", now)
	m.Stabilize()
	if v := consumerValues(t, m); v != nil || !m.ConsumersHeld() {
		t.Fatalf("the list did not wait for the others once the vault answered one: %v", v)
	}
	m.ReleaseDue(now.Add(FirstConsumersWait - time.Millisecond))
	m.Stabilize()
	if v := consumerValues(t, m); v != nil {
		t.Fatalf("released before 5s from the vault's first answer: %v", v)
	}
	m.ReleaseDue(now.Add(FirstConsumersWait))
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 0 || file(m, "gitea", "/etc/gitea/consumers.json").State != graph.Ready {
		t.Fatalf("after 5s from the vault's first answer the list is %v, want empty and filled", v)
	}
	m.SetSecret(ace, []byte("s-ace"), now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "s-ace" {
		t.Fatalf("a credential answered later is not listed: %v", v)
	}
}

// A provider's plan moving to a new templates archive rebuilds its
// consumers list: the credentials it held come back to it without an ask,
// so the list keeps every consumer whatever the vault does meanwhile (as a
// module's own secret is held while the module is here). A consumer that
// unbinds meanwhile takes its credential with it.
func TestAProvidersNewArchiveKeepsItsConsumersCredentials(t *testing.T) {
	const digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	m := providerOfTwo(t)
	now := time.Now()
	ace, g14 := "pair/gitea/gitea-read/ace/cc", "pair/gitea/gitea-read/g14/cc"
	m.SetSecret(ace, []byte("s-ace"), now)
	m.SetSecret(g14, []byte("s-g14"), now)
	m.Stabilize()
	if v := consumerValues(t, m); len(v) != 2 {
		t.Fatalf("first value %v", v)
	}
	p := Plan{Files: []FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"}}, Provides: []Offer{{Provision: "gitea-read"}}}
	p.Templates = TemplatesRef{Ref: "file:///t/gitea-b.tar", Digest: digestB}
	m.Put(spec.AssignmentsBucket, "ace.gitea", planJSON("ace", "gitea", p))
	m.Stabilize()
	if !m.HoldsSecret(ace) || !m.HoldsSecret(g14) {
		t.Fatalf("the consumers' credentials were dropped between two archives")
	}
	m.Put(spec.AssignmentsBucket, "g14.cc", planJSON("g14", "cc", Plan{}))
	m.Stabilize()
	if m.HoldsSecret(g14) {
		t.Errorf("the credential of a consumer that unbound is still held")
	}
	m.SetArchive("gitea", digestB, map[string][]byte{"c": []byte("${consumers:gitea-read}")})
	m.Stabilize()
	if asked := m.TakeNewSecrets(); len(asked) != 0 {
		t.Errorf("the new archive's list asked the vault again for %v", asked)
	}
	if v := consumerValues(t, m); len(v) != 1 || v[0] != "s-ace" {
		t.Fatalf("the list on the new archive is %v, want s-ace", v)
	}
}

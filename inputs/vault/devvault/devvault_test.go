package devvault_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func expect(t *testing.T, r vault.Result, want vault.Outcome, reasonHas string) {
	t.Helper()
	if r.Outcome != want {
		t.Fatalf("outcome %s (%s), want %s", r.Outcome, r, want)
	}
	if !strings.Contains(r.Reason, reasonHas) {
		t.Fatalf("reason %q does not say %q", r.Reason, reasonHas)
	}
	if want != vault.Sealed && r.Value != nil {
		t.Fatalf("%s result carries a value", want)
	}
}

func TestSealedRoundTrip(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("sk-round-trip"))
	c := e.client(t, "ace", zerolog.Nop())

	r := c.Ask(e.ctx, name, "claude-code")
	expect(t, r, vault.Sealed, "")
	if string(r.Value) != "sk-round-trip" {
		t.Fatalf("value %q, want sk-round-trip", r.Value)
	}
	asks := e.vault.Asks()
	want := devvault.Ask{Subject: "mesh-vault.get.provisioner.ace", Secret: name, Node: "ace", Module: "claude-code", Outcome: "sealed"}
	if len(asks) != 1 || asks[0] != want {
		t.Fatalf("asks %+v, want [%+v]", asks, want)
	}

	// A rotation reaches the next ask.
	e.vault.Set(e.ctx, name, []byte("sk-rotated"))
	if r := c.Ask(e.ctx, name, "claude-code"); string(r.Value) != "sk-rotated" {
		t.Fatalf("after rotation: %s, value differs", r)
	}
	if n := e.vault.AskCount(name); n != 2 {
		t.Fatalf("AskCount = %d, want 2", n)
	}
}

func TestNodeNameEncodedInSubject(t *testing.T) {
	e := newEnv(t, true, [2]string{"rack.1", "claude-code"})
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	r := e.client(t, "rack.1", zerolog.Nop()).Ask(e.ctx, name, "claude-code")
	expect(t, r, vault.Sealed, "")
	if s := e.vault.Asks()[0].Subject; s != "mesh-vault.get.provisioner.rack=2E1" {
		t.Fatalf("subject %q", s)
	}
}

func TestAbsent(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	name := spec.OwnSecretName("claude-code", "not-there")
	r := e.client(t, "ace", zerolog.Nop()).Ask(e.ctx, name, "claude-code")
	expect(t, r, vault.Absent, name)
	e.vault.Set(e.ctx, name, []byte("now-there"))
	r = e.client(t, "ace", zerolog.Nop()).Ask(e.ctx, name, "claude-code")
	expect(t, r, vault.Sealed, "")
}

func TestRefusedUnassignedModule(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"}, [2]string{"g14", "other"})
	c := e.client(t, "ace", zerolog.Nop())
	own := spec.OwnSecretName("other", "api-key")
	prov := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "other", "")
	for _, name := range []string{own, prov} {
		e.vault.Set(e.ctx, name, []byte("not-for-ace"))
		expect(t, c.Ask(e.ctx, name, "other"), vault.Refused, "not assigned to node \"ace\"")
	}
	// Assigning the module to ace opens both.
	e.assign(t, "ace", "other")
	expect(t, c.Ask(e.ctx, own, "other"), vault.Sealed, "")
	expect(t, c.AskCredential(e.ctx, prov, "other", "token"), vault.Sealed, "")
	// Taking it off closes them again.
	if err := e.bucket.Delete(e.ctx, "ace.other"); err != nil {
		t.Fatal(err)
	}
	expect(t, c.Ask(e.ctx, own, "other"), vault.Refused, "not assigned")
}

func TestRefusedProvisionForAnotherNode(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"}, [2]string{"g14", "claude-code"})
	name := spec.ProvisionSecretName("gitea", "gitea-read", "g14", "claude-code", "")
	e.vault.Set(e.ctx, name, []byte("g14-token"))
	expect(t, e.client(t, "ace", zerolog.Nop()).Ask(e.ctx, name, "claude-code"), vault.Refused, `for node "g14", asked by node "ace"`)
	expect(t, e.client(t, "g14", zerolog.Nop()).AskCredential(e.ctx, name, "claude-code", "token"), vault.Sealed, "")
}

// The vault checks the credential form it is sent (SPEC §4.2 r2): a
// provision/ request must carry one, the one issued when it holds one; no
// other request carries one.
func TestCredentialFormChecked(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	c := e.client(t, "ace", zerolog.Nop())
	prov := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", "second")
	own := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, prov, []byte("tok"))
	e.vault.Set(e.ctx, own, []byte("key"))
	expect(t, c.Ask(e.ctx, prov, "claude-code"), vault.Refused, "carries no credential form")
	expect(t, c.AskCredential(e.ctx, prov, "claude-code", "ssh-key"), vault.Sealed, "")
	e.vault.SetForm(prov, "token")
	expect(t, c.AskCredential(e.ctx, prov, "claude-code", "ssh-key"), vault.Refused, `issued as credential form "token", asked as "ssh-key"`)
	expect(t, c.AskCredential(e.ctx, prov, "claude-code", "token"), vault.Sealed, "")
	expect(t, c.AskCredential(e.ctx, own, "claude-code", "token"), vault.Refused, "only a provisions entry's")
	expect(t, c.Ask(e.ctx, own, "claude-code"), vault.Sealed, "")
	if asks := e.vault.Asks(); asks[len(asks)-1].Credential != "" || asks[len(asks)-2].Credential != "token" {
		t.Errorf("asks recorded credentials %+v", asks[len(asks)-2:])
	}
}

func TestPairOnlyForTheProvidersNode(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"}, [2]string{"g14", "claude-code"}, [2]string{"forge", "gitea"})
	plain := spec.PairSecretName("gitea", "gitea-read", "g14", "claude-code", "")
	local := spec.PairSecretName("gitea", "gitea-read", "g14", "claude-code", "second")
	e.vault.Set(e.ctx, plain, []byte("pair-1"))
	e.vault.Set(e.ctx, local, []byte("pair-2"))

	// The consumer's own node does not host gitea: refused.
	g14 := e.client(t, "g14", zerolog.Nop())
	expect(t, g14.Ask(e.ctx, plain, "claude-code"), vault.Refused, `node "g14" does not host provider "gitea"`)
	expect(t, e.client(t, "ace", zerolog.Nop()).Ask(e.ctx, local, "claude-code"), vault.Refused, "does not host provider")

	forge := e.client(t, "forge", zerolog.Nop())
	r := forge.Ask(e.ctx, plain, "gitea")
	expect(t, r, vault.Sealed, "")
	if string(r.Value) != "pair-1" {
		t.Fatalf("pair value %q", r.Value)
	}
	if r := forge.Ask(e.ctx, local, "gitea"); string(r.Value) != "pair-2" {
		t.Fatalf("pair with local: %s", r)
	}
}

func TestRefusedOutOfShapeName(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	c := e.client(t, "ace", zerolog.Nop())
	for _, name := range []string{"api-key", "own/claude-code", "provision/gitea/ace/claude-code", "pair/gitea", "own//x"} {
		e.vault.Set(e.ctx, name, []byte("x"))
		expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Refused, "vault name")
	}
}

func TestRefusedNodeMismatch(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"}, [2]string{"g14", "claude-code"})
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	keys, _ := vault.NewKeys()
	body, _ := json.Marshal(vault.Request{Secret: name, Node: "g14", Module: "claude-code", PublicKey: keys.PublicBase64()})
	msg, err := bustest.Connect(t, e.srv).Request(spec.VaultGetSubject("ace"), body, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep vault.Reply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "refused" || rep.Box != "" || !strings.Contains(rep.Reason, `names node "g14"`) {
		t.Fatalf("reply %+v, want refused naming the mismatch", rep)
	}
}

// Without the assignments bucket no right can be checked: the ask is left
// unanswered (it used to be refused, which a client holds for ten
// minutes though the bucket is back seconds later: a bus back with its
// store lost), the vault's log says why, and once the bucket is made
// and the module assigned the same ask is sealed.
func TestNoAnswerWithoutAssignmentsBucketUntilItIsMade(t *testing.T) {
	e := newEnv(t, false)
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	c := e.client(t, "ace", zerolog.Nop())
	c.Timeout = 300 * time.Millisecond
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Silent, "within 300ms")
	if !strings.Contains(e.vlog.String(), "bucket mesh-controller_assignments does not exist (yet), so no assignment can be checked") {
		t.Fatalf("the vault's log does not say why it did not answer:\n%s", e.vlog.String())
	}
	kv, err := e.js.CreateKeyValue(e.ctx, jetstream.KeyValueConfig{Bucket: spec.AssignmentsBucket})
	if err != nil {
		t.Fatal(err)
	}
	e.bucket = kv
	e.assign(t, "ace", "claude-code")
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Sealed, "")
}

func TestForcedRefusal(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	e.vault.Refuse(name, "sealed off by the operator")
	c := e.client(t, "ace", zerolog.Nop())
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Refused, "sealed off by the operator")
	e.vault.Refuse(name, "")
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Sealed, "")
}

func TestSilent(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("v"))
	c := e.client(t, "ace", zerolog.Nop())
	c.Timeout = 200 * time.Millisecond

	e.vault.SetSilent(true)
	start := time.Now()
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Silent, "within 200ms")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("silent ask took %s", d)
	}
	if n := e.vault.AskCount(name); n != 1 {
		t.Fatalf("the silent vault saw %d asks, want 1", n)
	}
	e.vault.SetSilent(false)
	expect(t, c.Ask(e.ctx, name, "claude-code"), vault.Sealed, "")
}

// SetSilentFor leaves one name's asks unanswered and answers the others.
func TestSilentForOneName(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	quiet, other := spec.OwnSecretName("claude-code", "quiet"), spec.OwnSecretName("claude-code", "other")
	e.vault.Set(e.ctx, quiet, []byte("q"))
	e.vault.Set(e.ctx, other, []byte("o"))
	c := e.client(t, "ace", zerolog.Nop())
	c.Timeout = 200 * time.Millisecond

	e.vault.SetSilentFor(quiet, true)
	expect(t, c.Ask(e.ctx, quiet, "claude-code"), vault.Silent, "within 200ms")
	expect(t, c.Ask(e.ctx, other, "claude-code"), vault.Sealed, "")
	e.vault.SetSilentFor(quiet, false)
	expect(t, c.Ask(e.ctx, quiet, "claude-code"), vault.Sealed, "")
}

func TestSilentWithoutVault(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	e.vault.Stop()
	c := e.client(t, "ace", zerolog.Nop())
	start := time.Now()
	expect(t, c.Ask(e.ctx, spec.OwnSecretName("claude-code", "api-key"), "claude-code"), vault.Silent, "no vault answers mesh-vault.get.provisioner.ace")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("no-responders ask took %s", d)
	}
}

func TestQueueGroupAnswersOnce(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"})
	second := devvault.New(zerolog.Nop())
	if err := second.Start(bustest.Connect(t, e.srv), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Stop)
	name := spec.OwnSecretName("claude-code", "x")
	c := e.client(t, "ace", zerolog.Nop())
	for i := 0; i < 10; i++ {
		c.Ask(e.ctx, name, "claude-code")
	}
	if a, b := e.vault.AskCount(name), second.AskCount(name); a+b != 10 {
		t.Fatalf("asks seen %d + %d, want 10 in all", a, b)
	}
}

func TestSecretChanged(t *testing.T) {
	e := newEnv(t, true)
	watcher := bustest.Connect(t, e.srv)
	var mu sync.Mutex
	var got []string
	sub, err := vault.WatchChanged(watcher, zerolog.Nop(), func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	raw := make(chan *nats.Msg, 10)
	rawSub, err := watcher.ChanSubscribe(spec.VaultChangedSubject, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer rawSub.Unsubscribe()
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}

	name := spec.OwnSecretName("claude-code", "api-key")
	e.vault.Set(e.ctx, name, []byte("changed-value-31"))
	e.vault.Delete(name)
	bustest.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			return fmt.Errorf("%d secret-changed events, want 2", len(got))
		}
		return nil
	})
	mu.Lock()
	if got[0] != name || got[1] != name {
		t.Fatalf("changed %q, want %q twice", got, name)
	}
	mu.Unlock()
	m := <-raw
	if string(m.Data) != `{"secret":"`+name+`"}` {
		t.Fatalf("payload %s, want only the name", m.Data)
	}
}

func TestNothingLeaks(t *testing.T) {
	e := newEnv(t, true, [2]string{"ace", "claude-code"}, [2]string{"forge", "gitea"})
	const planted = "PLANTED-c0ffee-4b1d-secret"
	forms := []string{planted, strings.ToLower(planted), hexOf([]byte(planted)),
		strings.ToLower(hexOf([]byte(planted))), b64([]byte(planted))}

	var mu sync.Mutex
	var wire [][]byte
	var sealedReplies int
	spy := bustest.Connect(t, e.srv)
	if _, err := spy.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		wire = append(wire, append([]byte(m.Subject+" "+m.Reply+" "), m.Data...))
		for k, vs := range m.Header {
			for _, v := range vs {
				wire = append(wire, []byte(k+": "+v))
			}
		}
		if bytes.Contains(m.Data, []byte(`"status":"sealed"`)) {
			sealedReplies++
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}

	clientLog := &bustest.Buffer{}
	c := e.client(t, "ace", zerolog.New(clientLog).Level(zerolog.DebugLevel))
	forge := e.client(t, "forge", zerolog.New(clientLog).Level(zerolog.DebugLevel))
	own := spec.OwnSecretName("claude-code", "api-key")
	pair := spec.PairSecretName("gitea", "gitea-read", "ace", "claude-code", "")
	e.vault.Set(e.ctx, own, []byte(planted))
	e.vault.Set(e.ctx, pair, []byte(planted))
	results := []vault.Result{c.Ask(e.ctx, own, "claude-code"), forge.Ask(e.ctx, pair, "gitea")}
	for _, r := range results {
		if string(r.Value) != planted {
			t.Fatalf("ask did not bring the planted value: %s", r)
		}
	}
	e.vault.Refuse(own, "refused for the leak check")
	results = append(results, c.Ask(e.ctx, own, "claude-code"), c.Ask(e.ctx, pair, "claude-code"))
	e.vault.Delete(own)

	bustest.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if sealedReplies != 2 {
			return fmt.Errorf("%d sealed replies on the spy, want 2", sealedReplies)
		}
		return nil
	})
	if !strings.Contains(clientLog.String(), `"outcome":"sealed"`) || !strings.Contains(e.vlog.String(), `"outcome":"sealed"`) {
		t.Fatalf("logs did not record the asks:\nclient: %s\nvault: %s", clientLog, e.vlog)
	}
	places := map[string]string{"client log": clientLog.String(), "vault log": e.vlog.String()}
	mu.Lock()
	for _, w := range wire {
		places["the bus"] += string(w) + "\n"
	}
	mu.Unlock()
	for _, r := range results {
		places["results"] += r.String() + " "
		js, _ := json.Marshal(r)
		places["results"] += string(js)
	}
	for where, text := range places {
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("%s holds the planted value (%q):\n%s", where, f, text)
			}
		}
	}
}

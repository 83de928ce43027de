package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// devVault starts a dev vault on the test's connection; it reads the
// assignments bucket to decide rights, so put assignments first.
func (m *mesh) devVault() *devvault.Vault {
	m.t.Helper()
	v := devvault.New(zerolog.New(m.logs))
	if err := v.Start(m.nc, m.js); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(v.Stop)
	return v
}

// vaultAsks records when each vault request was seen on the bus.
type vaultAsks struct {
	mu  sync.Mutex
	at  map[string][]time.Time
	sub *nats.Subscription
}

func (m *mesh) watchVaultAsks() *vaultAsks {
	m.t.Helper()
	va := &vaultAsks{at: map[string][]time.Time{}}
	sub, err := m.nc.Subscribe("mesh-vault.get.>", func(msg *nats.Msg) {
		var r struct {
			Secret string `json:"secret"`
		}
		json.Unmarshal(msg.Data, &r)
		va.mu.Lock()
		va.at[r.Secret] = append(va.at[r.Secret], time.Now())
		va.mu.Unlock()
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	m.t.Cleanup(func() { sub.Unsubscribe() })
	va.sub = sub
	return va
}

func (va *vaultAsks) times(name string) []time.Time {
	va.mu.Lock()
	defer va.mu.Unlock()
	return append([]time.Time(nil), va.at[name]...)
}

// appPlan: one own secret with a path, one named provision credential with
// a stricter mode, two templates naming the own secret and a plain file.
func appPlan() nodes.Plan {
	return nodes.Plan{
		Files: []nodes.FileSpec{
			{Path: "/etc/app/app.conf", Template: "conf", Mode: "0644"},
			{Path: "/etc/app/other.conf", Template: "other"},
			{Path: "/etc/app/plain.conf", Template: "plain"},
		},
		Secrets: []nodes.SecretSpec{{Name: "api-key", Path: "/etc/app/api-key"}},
		Provisions: []nodes.ProvisionSpec{{Name: "forge-token", Provision: "gitea-read", Provider: "gitea", Credential: "token",
			Path: "/etc/app/forge-token", Mode: "0400"}},
	}
}

var appTemplates = map[string]string{
	"conf":  "key = ${secret:api-key}\ntoken = ${secret:forge-token}\n",
	"other": "again = ${secret:api-key}\n",
	"plain": "model = ${config:model}\n",
}

const (
	ownApp  = "own/app/api-key"
	provApp = "provision/gitea/gitea-read/ace/app"
)

func mode(t *testing.T, m *mesh, path string) string {
	t.Helper()
	_, md, err := m.file(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%04o", md)
}

func reportDigests(r map[string]any) map[string]string {
	out := map[string]string{}
	files, _ := r["files"].([]any)
	for _, f := range files {
		fm := f.(map[string]any)
		out[fm["path"].(string)], _ = fm["digest"].(string)
	}
	return out
}

// appMesh is the app module assigned on ace, with its config value, and the
// dev vault holding the named ones of its two secrets (own k-123,
// provisioned t-456).
func appMesh(t *testing.T, secrets ...string) (*mesh, *devvault.Vault) {
	t.Helper()
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	v := m.devVault()
	values := map[string]string{ownApp: "k-123", provApp: "t-456"}
	for _, name := range secrets {
		v.Set(t.Context(), name, []byte(values[name]))
	}
	return m, v
}

func TestOwnAndProvisionedSecretsFillTheirFilesAskedOnce(t *testing.T) {
	m, v := appMesh(t, ownApp, provApp)
	m.client("ace")

	m.waitFile("/etc/app/app.conf", "key = k-123\ntoken = t-456\n")
	m.waitFile("/etc/app/other.conf", "again = k-123\n")
	m.waitFile("/etc/app/api-key", "k-123")
	m.waitFile("/etc/app/forge-token", "t-456")
	r := m.waitState("ace", "app", "applied")
	for path, want := range map[string]string{
		"/etc/app/app.conf": "0600", "/etc/app/other.conf": "0600", "/etc/app/api-key": "0600",
		"/etc/app/forge-token": "0400", "/etc/app/plain.conf": "0644",
	} {
		if got := mode(t, m, path); got != want {
			t.Errorf("%s: mode %s, want %s", path, got, want)
		}
	}
	dg := reportDigests(r)
	if len(dg) != 5 {
		t.Fatalf("report files %v", dg)
	}
	for path, d := range dg {
		want := "hmac-sha256:"
		if path == "/etc/app/plain.conf" {
			want = "sha256:"
		}
		if !strings.HasPrefix(d, want) {
			t.Errorf("%s: digest %q, want %s…", path, d, want)
		}
		text, _, _ := m.file(path)
		if sum := sha256.Sum256([]byte(text)); want != "sha256:" && strings.Contains(d, hex.EncodeToString(sum[:])) {
			t.Errorf("%s: the report's digest is the plain sha256 of the secret-bearing content", path)
		}
	}
	// A change elsewhere re-renders, but asks the vault for nothing more.
	m.put(spec.ConfigBucket, "ace.app.model", "sonnet")
	m.waitFile("/etc/app/plain.conf", "model = sonnet\n")
	m.settle()
	for _, name := range []string{ownApp, provApp} {
		if n := v.AskCount(name); n != 1 {
			t.Errorf("%s asked %d times, want once", name, n)
		}
	}
	if n := len(v.Asks()); n != 2 {
		t.Errorf("%d vault asks in all, want 2: %v", n, v.Asks())
	}
	for _, a := range v.Asks() { // SPEC §4.2's request: the node, and the module the secret is for
		if a.Subject != "mesh-vault.get.provisioner.ace" || a.Node != "ace" || a.Module != "app" {
			t.Errorf("ask of %s on %s said node %q, module %q", a.Secret, a.Subject, a.Node, a.Module)
		}
	}
}

func TestARotatedSecretRefillsOnlyTheFilesNamingIt(t *testing.T) {
	m, v := appMesh(t, ownApp, provApp)
	m.client("ace")
	m.waitFile("/etc/app/app.conf", "key = k-123\ntoken = t-456\n")
	before := reportDigests(m.waitState("ace", "app", "applied"))
	from := m.fills.count()

	v.Set(t.Context(), provApp, []byte("t-789"))
	m.waitFile("/etc/app/app.conf", "key = k-123\ntoken = t-789\n")
	m.waitFile("/etc/app/forge-token", "t-789")
	m.settle()
	got := m.fills.since(from)
	want := map[string]bool{"/etc/app/app.conf": true, "/etc/app/forge-token": true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("sent %v, want only app.conf and forge-token", got)
	}
	if n := v.AskCount(provApp); n != 2 {
		t.Errorf("%s asked %d times, want twice (start, rotation)", provApp, n)
	}
	if n := v.AskCount(ownApp); n != 1 {
		t.Errorf("%s asked %d times, want once", ownApp, n)
	}
	bustest.Eventually(m.t, 5*time.Second, func() error {
		r, _ := m.report("ace", "app")
		after := reportDigests(r)
		if after["/etc/app/forge-token"] == before["/etc/app/forge-token"] || !strings.HasPrefix(after["/etc/app/forge-token"], "hmac-sha256:") {
			return fmt.Errorf("forge-token digest %q → %q", before["/etc/app/forge-token"], after["/etc/app/forge-token"])
		}
		if after["/etc/app/api-key"] != before["/etc/app/api-key"] {
			return fmt.Errorf("api-key digest moved: %q → %q", before["/etc/app/api-key"], after["/etc/app/api-key"])
		}
		return nil
	})
}

func waitingText(r map[string]any) string {
	b, _ := json.Marshal(r["waiting"])
	return string(b)
}

func TestAnAbsentSecretWaitsByNameAndIsAppliedOnceSet(t *testing.T) {
	m, v := appMesh(t, provApp)
	m.client("ace")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "app")
		w := waitingText(r)
		if r["state"] != "waiting" || !contains(w, `"name":"api-key"`) || !contains(w, ownApp) || !contains(w, "absent") {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	if _, _, err := m.file("/etc/app/plain.conf"); err == nil {
		t.Fatal("a file of a waiting module was written")
	}
	need, _ := m.get(spec.NeedsBucket, "ace.app.secret.api-key")
	if !contains(need, `"state":"waiting"`) {
		t.Fatalf("need %s", need)
	}
	v.Set(t.Context(), ownApp, []byte("k-123"))
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/api-key", "k-123")
	m.noMoreAsks(v, ownApp)
}

// noMoreAsks: once a secret is held, a retry scheduled while it was
// absent or unanswered asks nothing more.
func (m *mesh) noMoreAsks(v *devvault.Vault, name string) {
	m.t.Helper()
	n := v.AskCount(name)
	time.Sleep(700 * time.Millisecond) // past the test client's longest backoff
	if got := v.AskCount(name); got != n {
		m.t.Fatalf("%s asked %d more times after the vault handed it", name, got-n)
	}
}

func TestASilentVaultMakesWaitingNotFailedAndItsReturnApplies(t *testing.T) {
	m, v := appMesh(t, ownApp, provApp)
	v.SetSilent(true)
	var mu sync.Mutex
	var states []string
	sub, _ := m.nc.Subscribe("prov.applied.ace.app", func(msg *nats.Msg) {
		var r struct{ State string }
		json.Unmarshal(msg.Data, &r)
		mu.Lock()
		states = append(states, r.State)
		mu.Unlock()
	})
	defer sub.Unsubscribe()
	m.client("ace")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "app")
		if r["state"] != "waiting" || !contains(waitingText(r), "no answer within") || !contains(waitingText(r), ownApp) {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	// Asked again with backoff while silent, without the client restarting.
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if n := v.AskCount(ownApp); n < 3 {
			return fmt.Errorf("%s asked %d times while silent", ownApp, n)
		}
		return nil
	})
	v.SetSilent(false)
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/api-key", "k-123")
	m.noMoreAsks(v, ownApp)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range states {
		if s == "failed" {
			t.Fatalf("a silent vault failed the module: states %v", states)
		}
	}
}

// With no vault on the bus at all, the bus says so at once (no
// responders): the module waits saying no vault listens, not "no answer
// within 300ms" (an outside audit read a slow vault in asks 1 s apart).
func TestNoVaultOnTheBusIsSaidSoNotTakenForASlowOne(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	m.client("ace")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "app")
		if w := waitingText(r); r["state"] != "waiting" || !contains(w, "no answer: no vault listens on mesh-vault.get.provisioner.ace") || contains(w, "no answer within") {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
}

func TestARefusedSecretFailsWithTheVaultsReasonAndIsAskedAgainLater(t *testing.T) {
	const retry = 800 * time.Millisecond
	m, v := appMesh(t, ownApp, provApp)
	v.Refuse(ownApp, "policy 42 forbids app on ace")
	asks := m.watchVaultAsks()
	m.client("ace", func(c *Config) { c.RefusedRetry = retry })
	r := m.waitState("ace", "app", "failed")
	if !contains(fmt.Sprint(r["reason"]), "policy 42 forbids app on ace") {
		t.Fatalf("reason %q does not carry the vault's", r["reason"])
	}
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if n := len(asks.times(ownApp)); n < 2 {
			return fmt.Errorf("%s asked %d times", ownApp, n)
		}
		return nil
	})
	at := asks.times(ownApp)
	if gap := at[1].Sub(at[0]); gap < retry*9/10 {
		t.Fatalf("a refused secret asked again after %v, want the refused retry %v (not the backoff)", gap, retry)
	}
	if got, _ := m.report("ace", "app"); got["state"] != "failed" {
		t.Fatalf("still refused, but the report says %v", got)
	}
	v.Refuse(ownApp, "")
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/api-key", "k-123")
}

func TestAConfigValueHoldingASecretPlaceholderIsWrittenLiterally(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.lit.motto", "say ${secret:x} and $${y}")
	m.assign("ace", "lit", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/lit.conf", Template: "t"}}},
		map[string]string{"t": "motto = ${config:motto}\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/lit/x", []byte("never"))
	m.client("ace")
	m.waitFile("/etc/lit.conf", "motto = say ${secret:x} and $${y}\n")
	r := m.waitState("ace", "lit", "applied")
	if d := reportDigests(r)["/etc/lit.conf"]; !strings.HasPrefix(d, "sha256:") {
		t.Errorf("digest %q of a file holding no secret", d)
	}
	if got := mode(t, m, "/etc/lit.conf"); got != "0644" {
		t.Errorf("mode %s, want 0644", got)
	}
	m.settle()
	if asks := v.Asks(); len(asks) != 0 {
		t.Fatalf("the vault was asked %v", asks)
	}
	if _, ok := m.get(spec.NeedsBucket, "ace.lit.secret.x"); ok {
		t.Fatal("a need was recorded for a placeholder inside a value")
	}
}

// A secret the plan declares (an own secret, a named provisions entry)
// that no template names and no path writes is asked all the same (SPEC
// §4.2: "for each secret a plan names"; the vault acts on a credential's
// form), and the module waits for it by name until the vault holds it;
// but it is no placeholder, so no need (§5.2: a need is deleted when no
// template names it): a template that stops naming a secret the plan
// still declares takes its need away.
func TestADeclaredSecretNoTemplateNamesIsAskedAndWaitedFor(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/app/plain.conf", Template: "plain"}},
		Secrets:    []nodes.SecretSpec{{Name: "unused"}},
		Provisions: []nodes.ProvisionSpec{{Name: "tok", Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"plain": "model = ${config:model}\n"})
	v := m.devVault()
	own, prov := "own/app/unused", spec.ProvisionSecretName("gitea", "gitea-read", "ace", "app", "")
	m.client("ace")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "app")
		w := waitingText(r)
		if r["state"] != "waiting" || !contains(w, own) || !contains(w, prov) {
			return fmt.Errorf("report %v", r)
		}
		return nil
	})
	m.settle()
	if need, ok := m.get(spec.NeedsBucket, "ace.app.secret.unused"); ok {
		t.Fatalf("a need for a secret no template names: %s", need)
	}
	if need, ok := m.get(spec.NeedsBucket, "ace.app.config.model"); !ok || !contains(need, `"state":"met"`) {
		t.Fatalf("the config need: %s", need)
	}
	v.Set(t.Context(), own, []byte("s-1"))
	v.Set(t.Context(), prov, []byte("t-1"))
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/plain.conf", "model = opus\n")
	for _, a := range v.Asks() {
		if a.Secret == prov && a.Credential != "token" {
			t.Errorf("the provisions entry was asked with form %q", a.Credential)
		}
	}

	// A template naming the secret: its need is written; the template
	// naming it no more (the plan still declaring it): the need is deleted.
	plan := nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/plain.conf", Template: "plain"}},
		Secrets: []nodes.SecretSpec{{Name: "unused"}},
	}
	m.assign("ace", "app", plan, map[string]string{"plain": "model = ${config:model} ${secret:unused}\n"})
	bustest.Eventually(t, 10*time.Second, func() error {
		if need, ok := m.get(spec.NeedsBucket, "ace.app.secret.unused"); !ok || !contains(need, `"state":"met"`) {
			return fmt.Errorf("need of a secret a template names: %q", need)
		}
		return nil
	})
	m.assign("ace", "app", plan, map[string]string{"plain": "model = ${config:model}\n"})
	m.waitFile("/etc/app/plain.conf", "model = opus\n")
	bustest.Eventually(t, 10*time.Second, func() error {
		if need, ok := m.get(spec.NeedsBucket, "ace.app.secret.unused"); ok {
			return fmt.Errorf("need of a secret no template names any more: %q", need)
		}
		return nil
	})
	m.waitState("ace", "app", "applied")
}

// A secret the vault keeps saying is absent is asked again and again, but
// its need is written once (SPEC §5.2: when its state changes), and so are
// the report and its event: the sweep's "stood asked" reads the time of the
// need's last change, which an ask time in its why used to move at every
// ask. Explain still says when it was last asked.
func TestAnAbsentSecretAskedAgainMovesNoNeedReportOrEvent(t *testing.T) {
	m := newMesh(t)
	p := nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/ab/f", Template: "t"}},
		Secrets: []nodes.SecretSpec{{Name: "k"}}}
	m.assign("ace", "ab", p, map[string]string{"t": "${secret:k}\n"})
	v := m.devVault()
	events := m.appliedEvents("ace")
	m.client("ace", func(c *Config) { c.BackoffMin, c.BackoffMax = 100*time.Millisecond, 100*time.Millisecond })
	m.waitState("ace", "ab", "waiting")
	const key = "ace.ab.secret.k"
	const absent = `"why":"vault own/ab/k: absent"`
	var need0 jetstream.KeyValueEntry
	bustest.Eventually(t, 10*time.Second, func() error { // once the first answer is in
		var err error
		if need0, err = m.kv(spec.NeedsBucket).Get(context.Background(), key); err == nil && !strings.Contains(string(need0.Value()), absent) {
			err = fmt.Errorf("need %s", need0.Value())
		}
		return err
	})
	m.settle()
	report0, err := m.kv(spec.AppliedBucket).Get(context.Background(), "ace.ab")
	if err != nil {
		t.Fatal(err)
	}
	events0, asks0 := len(events()), v.AskCount("own/ab/k")
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := v.AskCount("own/ab/k") - asks0; n < 4 {
			return fmt.Errorf("asked %d more times", n)
		}
		return nil
	})
	m.settle()
	need1, _ := m.kv(spec.NeedsBucket).Get(context.Background(), key)
	report1, _ := m.kv(spec.AppliedBucket).Get(context.Background(), "ace.ab")
	if need1.Revision() != need0.Revision() || report1.Revision() != report0.Revision() || len(events()) != events0 {
		t.Errorf("asks that changed nothing moved the need %d→%d (%s → %s), the report %d→%d, events %d→%d",
			need0.Revision(), need1.Revision(), need0.Value(), need1.Value(), report0.Revision(), report1.Revision(), events0, len(events()))
	}
	if !strings.Contains(string(need1.Value()), absent) {
		t.Errorf("need %s, want %s", need1.Value(), absent)
	}
}

package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
)

// providerOfTwoConsumers is gitea on ace (its consumers file owned, its
// program restarted when the file changes) with cc on g14 and dd on ace
// bound to it, both credentials in the dev vault; the client is started
// with state dir state and control socket sock, and the list is filled
// with both. It returns the vault, the file's bytes and what stops the
// client.
func (m *mesh) providerOfTwoConsumers(f *stateFill, state, sock string, opts ...clientOpt) (*devvault.Vault, string, func()) {
	m.t.Helper()
	v := m.devVault()
	v.Set(m.t.Context(), pair("g14", "cc", ""), []byte("p1-secret"))
	v.Set(m.t.Context(), pair("ace", "dd", ""), []byte("p2-secret"))
	m.restartingProvider("ace")
	m.assign("g14", "cc", consumerPlan(), nil)
	m.assign("ace", "dd", consumerPlan(), nil)
	opts = append([]clientOpt{f.socket, func(c *Config) { c.StateDir = state }, withControl(sock)}, opts...)
	_, stop := m.startClient("ace", opts...)
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "dd", ""), pair("g14", "cc", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	text, _, _ := m.file("/etc/gitea/consumers.json")
	return v, text, stop
}

// A provider's client restarted while the vault is down (no reply to any
// ask) keeps the provider's consumers file as it is: its consumers list
// waits, the module reports waiting with a why that says the vault gave
// no answer (naming the credentials, never a value), explain says it,
// nothing is sent to the fill socket and the program is not restarted.
// When the vault is back the list is filled with every consumer. Before,
// the list was let go after 5 s with none of them: the file was rewritten
// `[]` and the provider restarted, every consumer losing its access
// because a client restarted while the vault was unreachable (SPEC §4.2:
// no reply is waited for; §4.5 leaves out a consumer the vault does not
// hold or refuses, not every consumer of a vault that does not answer).
func TestARestartWithTheVaultDownKeepsTheConsumersFile(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	state := t.TempDir()
	v, before, stop := m.providerOfTwoConsumers(f, state, ctlSock(t))
	restarts := f.programRestarts()
	stop()
	v.Stop() // the vault is down: asks get no reply

	sock := ctlSock(t)
	fillsFrom := m.fills.count()
	restarted := time.Now()
	m.client("ace", f.socket, func(c *Config) { c.StateDir = state }, withControl(sock))
	const why = "the vault has given no answer"
	m.waitWaiting("ace", "gitea", `"kind":"consumers"`, why, pair("g14", "cc", ""))
	// Past the 5 s the list's first value once waited at most.
	bustest.Eventually(t, 30*time.Second, func() error {
		if d := time.Since(restarted); d < nodes.FirstConsumersWait+time.Second {
			return fmt.Errorf("%s since the restart", d)
		}
		return nil
	})
	m.settle()
	if r, _ := m.report("ace", "gitea"); r["state"] != "waiting" {
		t.Errorf("the provider's report is %v with the vault down, want waiting", r)
	}
	if text, _, _ := m.file("/etc/gitea/consumers.json"); text != before {
		t.Errorf("the consumers file is %q after a restart with the vault down, want %q", text, before)
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the provider's program was restarted: %q", strings.TrimPrefix(got, restarts))
	}
	for _, r := range m.fills.requests("gitea", fillsFrom) {
		t.Errorf("gitea's files were sent with the vault down: %+v", r.Files)
	}
	e, text := explainOf(t, sock, "gitea")
	if !strings.Contains(text, why) || !strings.Contains(text, pair("ace", "dd", "")) {
		t.Errorf("explain does not say the vault gave no answer:\n%s", text)
	}
	rep, _ := m.get("mesh-provisioner_applied", "ace.gitea")
	whole, _ := json.Marshal(e)
	for what, b := range map[string]string{"report": rep, "explain": string(whole), "logs": m.logs.String()} {
		if strings.Contains(b, "p1-secret") || strings.Contains(b, "p2-secret") {
			t.Errorf("a credential's value is in the %s", what)
		}
	}

	if err := v.Start(m.nc, m.js); err != nil {
		t.Fatal(err)
	}
	m.waitConsumers("/etc/gitea/consumers.json", pair("ace", "dd", ""), pair("g14", "cc", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	if text, _, _ := m.file("/etc/gitea/consumers.json"); text != before {
		t.Errorf("the consumers file is %q once the vault is back, want %q", text, before)
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the provider's program was restarted once the vault was back: %q", strings.TrimPrefix(got, restarts))
	}
}

// When the bus comes back while the vault stays down, every credential is
// asked again and gets no reply: the provider's consumers list keeps every
// consumer whose credential it holds (SPEC §4.2: no reply is waited for),
// once the re-ask round's time is up too, and a consumer bound meanwhile
// waits for the vault without taking the others out. The file keeps its
// bytes, the program is not restarted, the provider stays applied.
func TestTheBusBackWithTheVaultStillDownKeepsEveryConsumer(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	spread := 300 * time.Millisecond
	v, before, _ := m.providerOfTwoConsumers(f, t.TempDir(), ctlSock(t), func(c *Config) { c.ReaskSpread = spread })
	restarts := f.programRestarts()
	v.Stop()

	backs := strings.Count(m.logs.String(), "the bus is back")
	m.busDown()
	m.busUp()
	bustest.Eventually(t, 30*time.Second, func() error {
		if strings.Count(m.logs.String(), "the bus is back") == backs {
			return fmt.Errorf("the client has not reconnected")
		}
		return nil
	})
	back := time.Now()
	m.assign("g14", "ee", consumerPlan(), nil) // bound while the vault is down
	bustest.Eventually(t, 30*time.Second, func() error {
		if d := time.Since(back); d < spread+nodes.FirstConsumersWait+time.Second {
			return fmt.Errorf("%s since the bus came back", d)
		}
		return nil
	})
	m.settle()
	if text, _, _ := m.file("/etc/gitea/consumers.json"); text != before {
		t.Errorf("the consumers file is %q after the bus came back with the vault down, want %q", text, before)
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the provider's program was restarted: %q", strings.TrimPrefix(got, restarts))
	}
	if r, _ := m.report("ace", "gitea"); r["state"] != "applied" {
		t.Errorf("the provider is %v after the bus came back with the vault down, want applied", r)
	}
}

// A vault that answers but refuses one consumer's credential leaves that
// consumer out, said in the log by name, and serves the others (SPEC
// §4.5): the rule that waits for a vault that answers nothing does not
// hold a list the vault does answer for.
func TestAConsumerTheVaultRefusesIsLeftOutAndTheOthersAreServed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.restartingProvider("ace")
	names := m.manyConsumers(3)
	v := m.devVault()
	for i, name := range names {
		v.Set(t.Context(), name, []byte(fmt.Sprintf("cred-%d", i)))
	}
	v.Refuse(names[1], "cc on c001 may not read gitea")
	m.client("ace", f.socket)
	m.waitConsumers("/etc/gitea/consumers.json", names[0], names[2])
	m.waitState("ace", "gitea", "applied")
	m.settle()
	if n := strings.Count(f.programRestarts(), "gitea.service"); n != 1 {
		t.Errorf("gitea restarted %d times, want once", n)
	}
	found := false
	for _, line := range strings.Split(m.logs.String(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["secret"] == names[1] &&
			strings.Contains(fmt.Sprint(e["message"]), "refused") && strings.Contains(fmt.Sprint(e["message"]), "left out") {
			found = true
		}
	}
	if !found {
		t.Errorf("no log line says %s refused and left out", names[1])
	}
}

// A provider's plan moving to a new templates archive while the vault is
// down is filled from the new archive with its consumers list as it was:
// the credentials the list held are kept while their bindings stand, as a
// module's own secret is. Before, they were dropped with the old archive's
// files and asked again, so the list of a vault that did not answer went
// without them (rewritten empty, the program restarted; or, waiting for
// the vault, the module's new files not filled).
func TestAProvidersNewArchiveWithTheVaultDownKeepsItsConsumers(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	v, before, _ := m.providerOfTwoConsumers(f, t.TempDir(), ctlSock(t))
	restarts := f.programRestarts()
	v.Stop()

	p := giteaPlan()
	p.Files[0] = owned("/etc/gitea/consumers.json", "consumers", "gitea.service")
	m.assign("ace", "gitea", p, map[string]string{"consumers": "${consumers:gitea-read}", "ini": "port = ${port:http}\nname = forge\n"})
	m.waitFile("/etc/gitea/app.ini", "port = 3000\nname = forge\n")
	m.waitState("ace", "gitea", "applied")
	m.settle()
	if text, _, _ := m.file("/etc/gitea/consumers.json"); text != before {
		t.Errorf("the consumers file is %q after the provider's new archive with the vault down, want %q", text, before)
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the provider's program was restarted: %q", strings.TrimPrefix(got, restarts))
	}
}

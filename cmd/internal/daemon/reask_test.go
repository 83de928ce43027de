package daemon

import (
	"fmt"
	"strings"
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

// A rotation whose secret-changed is published while the client is cut
// off from the bus still reaches its file once the bus is back, without a
// client restart (SPEC §4.2 r2); a reconnect with nothing rotated re-sends
// nothing beyond the one refill.
//
// The bus is stopped and started again on its own port. The dev vault has
// a connection of its own that keeps no reconnect buffer, so the
// secret-changed its rotation publishes during the outage is lost (not
// sent on reconnect) exactly as one the client missed while away.
func TestARotationWhileTheBusIsAwayReachesItsFileWhenItIsBack(t *testing.T) {
	m := newMesh(t)
	v, vc := m.appOnAReconnectingVault(300 * time.Millisecond)

	// The bus away: the rotation is stored, its secret-changed lost.
	m.busDown()
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !vc.IsReconnecting() {
			return fmt.Errorf("the vault's connection is %v", vc.Status())
		}
		return nil
	})
	v.Set(t.Context(), ownApp, []byte("k-999"))
	m.busUp()
	m.waitFile("/etc/app/api-key", "k-999")
	m.waitFile("/etc/app/app.conf", "key = k-999\ntoken = t-456\n")
	m.waitState("ace", "app", "applied")

	// Away again with nothing rotated: both names are asked again, and the
	// files go out once, in the reconnect's refill.
	time.Sleep(500 * time.Millisecond) // past the first reconnect's spread
	own, prov := v.AskCount(ownApp), v.AskCount(provApp)
	from := m.fills.count()
	m.busDown()
	m.busUp()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if v.AskCount(ownApp) == own || v.AskCount(provApp) == prov {
			return fmt.Errorf("asked %d and %d times since the bus came back, want each again",
				v.AskCount(ownApp)-own, v.AskCount(provApp)-prov)
		}
		return nil
	})
	// The refill waits for every watch's fresh snapshot, and a watch may
	// be in a look at its bucket the outage holds up (up to 5 s): wait for
	// the refill itself, then for the client to settle.
	paths := []string{"/etc/app/api-key", "/etc/app/forge-token", "/etc/app/app.conf"}
	bustest.Eventually(m.t, 15*time.Second, func() error {
		for _, p := range paths {
			if m.fillsPerPath(from)[p] == 0 {
				return fmt.Errorf("%s not sent again since the bus came back", p)
			}
		}
		return nil
	})
	m.settle() // room for a needless fill to show
	got := m.fillsPerPath(from)
	for _, p := range paths {
		if got[p] != 1 {
			t.Errorf("%s sent %d times after a reconnect with nothing rotated, want the one refill: %v", p, got[p], got)
		}
	}
}

// reconnectingVault starts a dev vault on a connection of its own that
// reconnects when the bus comes back (busDown, busUp) and keeps no
// reconnect buffer, so what it publishes while the bus is away is lost,
// as a secret-changed the client missed while away.
func (m *mesh) reconnectingVault() (*devvault.Vault, *nats.Conn) {
	m.t.Helper()
	vc, err := nats.Connect(m.s.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectBufSize(-1))
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(vc.Close)
	js, _ := jetstream.New(vc)
	v := devvault.New(zerolog.New(m.logs))
	if err := v.Start(vc, js); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(v.Stop)
	return v, vc
}

// appOnAReconnectingVault assigns app (its config model opus) with its
// two secrets, k-123 and t-456, held by a reconnectingVault, starts ace's
// client with its re-asks after a reconnect spread over spread, and waits
// for app applied with its api-key written.
func (m *mesh) appOnAReconnectingVault(spread time.Duration) (*devvault.Vault, *nats.Conn) {
	m.t.Helper()
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	v, vc := m.reconnectingVault()
	v.Set(m.t.Context(), ownApp, []byte("k-123"))
	v.Set(m.t.Context(), provApp, []byte("t-456"))
	m.client("ace", func(c *Config) { c.ReaskSpread = spread })
	m.waitFile("/etc/app/api-key", "k-123")
	m.waitState("ace", "app", "applied")
	return v, vc
}

// busDown stops the nats-server; busUp starts it again on its own port
// and store, and connects the test to it.
func (m *mesh) busDown() { bustest.Stop(m.s) }

func (m *mesh) busUp() {
	m.t.Helper()
	m.s = bustest.Start(m.t, m.again)
	m.connect()
}

// A vault name still waiting (absent) when the bus goes away is asked
// again once it is back, like one held (SPEC §4.2 r2: "every vault name
// it holds or waits for"), not only at its next backoff.
func TestANameStillWaitingIsAskedAgainWhenTheBusIsBack(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", appPlan(), appTemplates)
	v, vc := m.reconnectingVault()
	v.Set(t.Context(), provApp, []byte("t-456")) // ownApp stays absent
	// A backoff longer than the test: any second ask is the reconnect's.
	m.client("ace", func(c *Config) {
		c.ReaskSpread, c.BackoffMin, c.BackoffMax = 300*time.Millisecond, time.Hour, time.Hour
	})
	m.waitState("ace", "app", "waiting")
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if n := v.AskCount(ownApp); n != 1 {
			return fmt.Errorf("%s asked %d times", ownApp, n)
		}
		return nil
	})

	m.busDown()
	m.busUp()
	// The asks are counted on the bus, by a subscriber there before the
	// client is back (it reconnects after 100 ms at the soonest): the vault
	// reconnects by itself, and an ask made before it is subscribed again
	// goes unanswered (then waits out the hour's backoff) though it was made.
	asks, err := m.nc.SubscribeSync(spec.VaultGetSubject("ace"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(m.t, 15*time.Second, func() error {
		for {
			msg, err := asks.NextMsg(10 * time.Millisecond)
			if err != nil {
				return fmt.Errorf("%s not asked again since the bus came back", ownApp)
			}
			if strings.Contains(string(msg.Data), ownApp) {
				return nil
			}
		}
	})
	// The vault back on the bus (its subscriptions too: a flush after the
	// reconnect follows them), its rotation reaches the client.
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if !vc.IsConnected() {
			return fmt.Errorf("the vault is not connected again")
		}
		return vc.Flush()
	})
	v.Set(t.Context(), ownApp, []byte("k-123"))
	m.waitState("ace", "app", "applied")
}

// The bus coming back asks the vault again for every name, those it said
// absent or refused too (SPEC §4.2 r2); an ask sent before the vault is
// back on the bus gets no answer. Only the vault's own answer moves what
// it said: a need waiting on an absent secret keeps its why ("absent")
// and its entry, and a refused one's module stays failed, rather than
// each going to "no answer" and back, two reports and needs put for a
// secret that did not move (SPEC §5.2, §5.3; the sweep judges "stood
// asked" by the need's entry time, §6.2).
func TestAReaskThatGetsNoAnswerMovesNoAbsentOrRefusedSecret(t *testing.T) {
	m := newMesh(t)
	// Each module writes a path of its own: two writing one path clash,
	// and the one taken second fails for that before asking the vault.
	secretPlan := func(path string) nodes.Plan {
		return nodes.Plan{Files: []nodes.FileSpec{owned(path, "k", "")}, Secrets: []nodes.SecretSpec{{Name: "api-key"}}}
	}
	secretTmpl := map[string]string{"k": "key = ${secret:api-key}\n"}
	m.assign("ace", "absent", secretPlan("/etc/absent.conf"), secretTmpl)
	m.assign("ace", "refused", secretPlan("/etc/refused.conf"), secretTmpl)
	v, vc := m.reconnectingVault()
	v.Refuse("own/refused/api-key", "not for you")
	// The vault is slow to take requests again once the bus is back: every
	// reconnect's ask times out first.
	m.client("ace", func(c *Config) { c.ReaskSpread, c.BackoffMin = 50*time.Millisecond, 2*time.Second })
	// What the vault said, not a first ask that timed out (300 ms) on a
	// loaded machine: absent's module waits for "no answer" then too, and
	// the vault's own answer to the next ask (the backoff's, seconds
	// later, after was is taken) moves its need and report, as it should.
	m.needSays("ace", "absent", "secret", "api-key", "waiting", "vault own/absent/api-key: absent")
	m.waitFailed("ace", "refused", "vault own/refused/api-key: refused: not for you")
	m.settle()
	was := m.revisions()

	v.SetSilent(true)
	m.busDown()
	time.Sleep(1100 * time.Millisecond) // a new second for "at"
	m.busUp()
	bustest.Eventually(t, 10*time.Second, func() error {
		if !vc.IsConnected() {
			return fmt.Errorf("the vault is not back yet")
		}
		return nil
	})
	bustest.Eventually(t, 10*time.Second, func() error { // the reconnect's asks, unanswered
		for _, name := range []string{"own/absent/api-key", "own/refused/api-key"} {
			if n := v.AskCount(name); n < 2 {
				return fmt.Errorf("%s asked %d times", name, n)
			}
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // past the vault timeout of the asks
	v.SetSilent(false)
	m.settle()
	if moved := movedRevisions(was, m.revisions()); len(moved) > 0 {
		r, _ := m.get(spec.AppliedBucket, "ace.absent")
		t.Errorf("an ask that got no answer moved what the vault said: %v\n%s", moved, r)
	}
}

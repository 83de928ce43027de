package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/archive"
	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault"
)

// The first fill of a client started again waits for a vault answer that
// came back but is not taken in yet (queued for the loop), not only for
// an ask under way. The asker let go of an ask once its answer was queued
// (and Asking said no), so a batch that ended just before it was queued
// went on to the first fill without it: a provider's ${consumers:X} was filled without that
// consumer (left out until its credential is in) and again with it a
// moment later, the provider's program restarted twice though nothing
// had moved (TestAConsumersPlanThatDoesNotParseLeavesTheProviderAloneAcrossItsClientsRestart,
// 1 run in ~45 under load).
func TestTheFirstFillWaitsForAVaultAnswerNotYetTakenIn(t *testing.T) {
	m, _ := appMesh(t, ownApp)
	d, err := New(Config{Node: "ace", Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock, StateDir: t.TempDir(), Log: zerolog.New(m.logs)})
	if err != nil {
		t.Fatal(err)
	}
	askerOf(t, m, d)

	answerQueued(t, d)
	if !d.firstLooks(t.Context()) {
		t.Fatal("the first fill would go while a vault answer waits to be taken in")
	}
	<-d.asker.Answers()
	if d.firstLooks(t.Context()) {
		t.Fatal("the first fill still waits once the answer is taken in")
	}
}

// askerOf gives d, whose loop is not running, an asker of m's vault and a
// fetcher of its own, each trying again every second.
func askerOf(t *testing.T, m *mesh, d *Daemon) {
	t.Helper()
	keys, err := vault.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	retry := backoff.Doubling{Min: time.Second, Max: time.Second}
	d.asker = vault.NewAsker(t.Context(), &vault.Client{NC: m.nc, Node: "ace", Keys: keys, Timeout: 10 * time.Second, Log: d.log}, retry, 0)
	d.fetcher = archive.NewFetcher(t.Context(), &archive.Store{Dir: t.TempDir()}, retry)
}

// answerQueued asks for ownApp and waits for its answer to be queued (the
// loop is not running: it stays there).
func answerQueued(t *testing.T, d *Daemon) {
	t.Helper()
	d.asker.Ask(ownApp, "")
	// The loop is not running: the answer stays queued.
	bustest.Eventually(t, 30*time.Second, func() error {
		if len(d.asker.Answers()) == 0 {
			return fmt.Errorf("the answer is not queued yet")
		}
		return nil
	})
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/archive"
	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault"
)

// The daemon is not settled (OnSettled does not come) while a vault answer
// came back but is not taken in yet: the batch that ended just before it
// was queued is not the last of the cold start.
func TestOnSettledWaitsForAVaultAnswerNotYetTakenIn(t *testing.T) {
	m, _ := appMesh(t, ownApp)
	settled := 0
	d, err := New(Config{Node: "ace", Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock, StateDir: t.TempDir(),
		Log: zerolog.New(m.logs), OnSettled: func() { settled++ }})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := vault.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	retry := backoff.Doubling{Min: time.Second, Max: time.Second}
	d.asker = vault.NewAsker(t.Context(), &vault.Client{NC: m.nc, Node: "ace", Keys: keys, Timeout: 10 * time.Second, Log: d.log}, retry, 0)
	d.fetcher = archive.NewFetcher(t.Context(), &archive.Store{Dir: t.TempDir()}, retry)
	if d.js, err = jetstream.New(m.nc); err != nil {
		t.Fatal(err)
	}
	if d.out, err = d.newStage(m.nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.out.Stop)
	d.ready.Store(true) // past the first load: the loop's batches end in afterBatch

	d.asker.Ask(ownApp, "")
	// The loop is not running: the answer stays queued.
	bustest.Eventually(t, 30*time.Second, func() error {
		if len(d.asker.Answers()) == 0 {
			return fmt.Errorf("the answer is not queued yet")
		}
		return nil
	})
	d.afterBatch(t.Context(), false, false)
	if settled != 0 {
		t.Fatal("settled while a vault answer waits to be taken in")
	}
	d.onVault(<-d.asker.Answers())
	d.afterBatch(t.Context(), false, false)
	if settled != 1 {
		t.Fatalf("OnSettled came %d times once the answer was taken in, want once", settled)
	}
}

package daemon

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
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
	askerOf(t, m, d)
	if d.js, err = jetstream.New(m.nc); err != nil {
		t.Fatal(err)
	}
	if d.out, err = d.newStage(m.nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.out.Stop)
	d.ready.Store(true) // past the first load: the loop's batches end in afterBatch

	answerQueued(t, d)
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

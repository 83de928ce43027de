package archive

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// Refs of one digest share its arrival: module a's ref is an obj:// one on
// a bus that does not answer, its read under way first; module b names the
// same digest at a file:// ref that is there. Once b's read has got the
// archive, a is handed it too, with no error: before, a's try waited out
// its whole Timeout (30 s by default), failed "not fetched within", and a
// got the archive only at its next try, after the backoff, though the
// archive (which is all a digest says) had been here all along.
func TestARefWaitingOnASilentSourceTakesTheArchiveOnceAnotherRefOfItsDigestGotIt(t *testing.T) {
	s, js := startServer(t)
	s.Shutdown()
	s.WaitForShutdown() // the connection reconnects for ever: requests wait

	data := makeTar(t, false, sampleMembers()...)
	good, _ := writeArchive(t, "t.tar", data)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st := &Store{Dir: t.TempDir(), JS: js}
	f := NewFetcher(ctx, st, backoff.Doubling{Min: time.Hour, Max: time.Hour})
	obj := "obj://mesh-artifacts/t.tar"
	f.Fetch(nodes.ArchiveWant{Module: "a", Ref: obj, Digest: digestOf(data)})
	bustest.Eventually(t, 5*time.Second, func() error { // a's read is under way first
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.inFlight[refDigest{obj, digestOf(data)[len("sha256:"):]}] == nil {
			return errors.New("a's read not under way yet")
		}
		return nil
	})
	f.Fetch(nodes.ArchiveWant{Module: "b", Ref: good, Digest: digestOf(data)})

	got, _ := collect(t, f, 20*time.Second, "a", "b")
	for _, m := range []string{"b", "a"} {
		if r := got[m]; r.Err != nil || string(r.Members["config.toml"]) != string(sampleWant["config.toml"]) {
			t.Errorf("%s's first outcome: err %v, members %q; want the archive b's ref got", m, r.Err, r.Members)
		}
	}
}

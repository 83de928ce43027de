package archive

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/nodes"
)

// fifo makes a named pipe nobody writes to, and unblocks a reader stuck
// opening it when the test ends (the code before issue 19.8 was fixed).
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "templates.tar")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return p
}

// collect gathers the Fetcher's first outcome of each module named, and
// how long after the call it came, until every one has one or d passes.
func collect(t *testing.T, f *Fetcher, d time.Duration, modules ...string) (map[string]Fetched, map[string]time.Duration) {
	t.Helper()
	got, after := map[string]Fetched{}, map[string]time.Duration{}
	start := time.Now()
	deadline := time.After(d)
	for len(got) < len(modules) {
		select {
		case r := <-f.Fetched():
			if _, seen := got[r.Want.Module]; !seen && slices.Contains(modules, r.Want.Module) {
				got[r.Want.Module], after[r.Want.Module] = r, time.Since(start)
			}
		case <-deadline:
			t.Fatalf("after %s only %d outcome(s) of %v: %+v", d, len(got), modules, got)
		}
	}
	return got, after
}

func TestGetRefusesAFIFOWithoutWaitingForAWriter(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref := "file://" + fifo(t)
	got := make(chan error, 1)
	go func() {
		_, err := (&Store{Dir: t.TempDir()}).Get(context.Background(), ref, digestOf(data))
		got <- err
	}()
	select {
	case err := <-got:
		wantErr(t, err, nil, ref, "not a regular file")
	case <-time.After(2 * time.Second):
		t.Fatal("Get still waiting on the FIFO after 2s")
	}
}

// Issue 19.8: module a's ref is a FIFO; b has the same digest and a good
// ref. The FIFO used to block a's fetch for ever, and b's behind it (reads
// were shared by digest). Now a's is refused naming its ref (or filled from
// what b got) and b is filled at once.
func TestAFIFORefHoldsUpNoOtherRefOfTheSameDigest(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	good, _ := writeArchive(t, "t.tar", data)
	bad := "file://" + fifo(t)
	f := newFetcher(t)
	f.Fetch(nodes.ArchiveWant{Module: "a", Ref: bad, Digest: digestOf(data)})
	f.Fetch(nodes.ArchiveWant{Module: "b", Ref: good, Digest: digestOf(data)})
	got, _ := collect(t, f, 3*time.Second, "a", "b")
	if r := got["b"]; r.Err != nil || len(r.Members) != len(sampleWant) {
		t.Fatalf("b (good ref): %+v", r)
	}
	if r := got["a"]; r.Err != nil {
		wantErr(t, r.Err, nil, bad, "not a regular file")
		if Broken(r.Err) {
			t.Errorf("a FIFO is waited on (it may be replaced by the archive), not broken: %v", r.Err)
		}
	}
}

// A source that does not answer (here the object store, its bus gone) is
// given up after the Fetcher's Timeout, saying so and naming the ref, and
// fetched again; another ref is filled meanwhile. (One of the same digest
// would hand a its archive at once:
// TestARefWaitingOnASilentSourceTakesTheArchiveOnceAnotherRefOfItsDigestGotIt.)
func TestAFetchThatDoesNotAnswerTimesOutAndHoldsUpNoOtherRef(t *testing.T) {
	s, js := startServer(t)
	s.Shutdown()
	s.WaitForShutdown() // the connection reconnects for ever: requests wait

	data := makeTar(t, false, sampleMembers()...)
	other := makeTar(t, false, file("config.toml", "other"))
	good, _ := writeArchive(t, "t.tar", other)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f := NewFetcher(ctx, &Store{Dir: t.TempDir(), JS: js}, backoff.Doubling{Min: time.Hour, Max: time.Hour})
	f.Timeout = 300 * time.Millisecond
	obj := "obj://mesh-artifacts/t.tar"
	f.Fetch(nodes.ArchiveWant{Module: "a", Ref: obj, Digest: digestOf(data)})
	time.Sleep(50 * time.Millisecond) // a's read is under way first
	f.Fetch(nodes.ArchiveWant{Module: "b", Ref: good, Digest: digestOf(other)})

	got, after := collect(t, f, 3*time.Second, "a", "b")
	if r := got["b"]; r.Err != nil || string(r.Members["config.toml"]) != "other" {
		t.Fatalf("b (good ref): %+v", r)
	}
	if after["b"] > 200*time.Millisecond {
		t.Errorf("b filled after %s: held up by a", after["b"])
	}
	r := got["a"]
	wantErr(t, r.Err, context.DeadlineExceeded, obj)
	if Broken(r.Err) || !strings.Contains(r.Err.Error(), "300ms") {
		t.Errorf("a's error %q: want one worth waiting on that says the timeout", r.Err)
	}
}

package archive

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/nodes"
)

func newFetcher(t *testing.T) *Fetcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return NewFetcher(ctx, &Store{Dir: t.TempDir()}, backoff.Doubling{Min: 20 * time.Millisecond, Max: 80 * time.Millisecond})
}

func nextFetched(t *testing.T, f *Fetcher, d time.Duration) (Fetched, bool) {
	t.Helper()
	select {
	case r := <-f.Fetched():
		return r, true
	case <-time.After(d):
		return Fetched{}, false
	}
}

func TestFetcherFetchesAgainUntilTheArchiveIsThere(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	path := filepath.Join(t.TempDir(), "later.tar")
	w := nodes.ArchiveWant{Module: "web", Ref: "file://" + path, Digest: digestOf(data)}
	f := newFetcher(t)
	f.Fetch(w)
	for i := 0; i < 3; i++ {
		r, ok := nextFetched(t, f, 5*time.Second)
		if !ok {
			t.Fatalf("try %d: nothing delivered", i)
		}
		if r.Want != w || r.Err == nil || Broken(r.Err) {
			t.Fatalf("try %d: %+v", i, r)
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		r, ok := nextFetched(t, f, 5*time.Second)
		if !ok {
			t.Fatal("the archive arrived, and no fetch got it")
		}
		if r.Err == nil {
			if len(r.Members) != len(sampleWant) || string(r.Members["config.toml"]) != string(sampleWant["config.toml"]) {
				t.Fatalf("members = %q", r.Members)
			}
			break
		}
	}
	if r, ok := nextFetched(t, f, 300*time.Millisecond); ok {
		t.Fatalf("fetched again once got: %+v", r)
	}
}

func TestFetcherGivesUpOnABrokenArchiveAndWhatRetainDrops(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, _ := writeArchive(t, "t.tar", data)
	f := newFetcher(t)
	f.Fetch(nodes.ArchiveWant{Module: "web", Ref: ref, Digest: "sha256:" + digestOf(data)[len("sha256:")+2:] + "00"})
	if r, _ := nextFetched(t, f, 5*time.Second); !Broken(r.Err) {
		t.Fatalf("a mismatching archive: %+v", r)
	}
	if r, ok := nextFetched(t, f, 300*time.Millisecond); ok {
		t.Fatalf("a broken archive fetched again: %+v", r)
	}

	gone := nodes.ArchiveWant{Module: "old", Ref: "file:///nonexistent/t.tar", Digest: digestOf(data)}
	f.Fetch(gone)
	if r, _ := nextFetched(t, f, 5*time.Second); r.Err == nil || Broken(r.Err) {
		t.Fatalf("a missing archive: %+v", r)
	}
	f.Retain(func(w nodes.ArchiveWant) bool { return w != gone })
	if r, ok := nextFetched(t, f, 300*time.Millisecond); ok {
		t.Fatalf("fetched again after Retain dropped it: %+v", r)
	}
}

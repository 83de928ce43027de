package archive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// An archive whose bytes are not the plan's digest fails (Broken), and is
// fetched again with backoff, not dropped: the right bytes may land at the
// same ref later (the plan published before the archive, an older object
// under the name). Once they do it is got, and fetched no more.
func TestFetcherFetchesABrokenArchiveAgainUntilItIsRight(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	older := makeTar(t, false, file("config.toml", "older"))
	ref, path := writeArchive(t, "t.tar", older)
	w := nodes.ArchiveWant{Module: "web", Ref: ref, Digest: digestOf(data)}
	f := newFetcher(t)
	f.Fetch(w)
	for i := 0; i < 3; i++ {
		r, ok := nextFetched(t, f, 5*time.Second)
		if !ok {
			t.Fatalf("try %d: a mismatching archive not fetched again", i)
		}
		if r.Want != w || !Broken(r.Err) {
			t.Fatalf("try %d: %+v", i, r)
		}
		wantErr(t, r.Err, ErrDigestMismatch, ref)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		r, ok := nextFetched(t, f, 5*time.Second)
		if !ok {
			t.Fatal("the right archive landed, and no fetch got it")
		}
		if r.Err == nil {
			if string(r.Members["config.toml"]) != string(sampleWant["config.toml"]) {
				t.Fatalf("members = %q", r.Members)
			}
			break
		}
	}
	if r, ok := nextFetched(t, f, 300*time.Millisecond); ok {
		t.Fatalf("fetched again once got: %+v", r)
	}
}

// A fetch Retain drops, broken or not there yet, is fetched no more.
func TestFetcherStopsWhatRetainDrops(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	ref, _ := writeArchive(t, "t.tar", data)
	f := newFetcher(t)
	broken := nodes.ArchiveWant{Module: "web", Ref: ref, Digest: "sha256:" + strings.Repeat("0", 64)}
	gone := nodes.ArchiveWant{Module: "old", Ref: "file:///nonexistent/t.tar", Digest: digestOf(data)}
	f.Fetch(broken)
	f.Fetch(gone)
	got, _ := collect(t, f, 5*time.Second, "web", "old")
	if r := got["web"]; !Broken(r.Err) {
		t.Fatalf("a mismatching archive: %+v", r)
	}
	if r := got["old"]; r.Err == nil || Broken(r.Err) {
		t.Fatalf("a missing archive: %+v", r)
	}
	f.Retain(func(nodes.ArchiveWant) bool { return false })
	// A try under way when Retain ran still delivers its outcome: at most
	// one a fetch. Backoff is 20–80ms, so 600ms would see several more.
	n := 0
	for {
		if _, ok := nextFetched(t, f, 600*time.Millisecond); !ok {
			break
		}
		if n++; n > 2 {
			t.Fatalf("%d outcomes after Retain dropped both fetches", n)
		}
	}
}

package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/nodes"
)

// plans is what the plans name now, for Retain's keep.
type plans map[nodes.ArchiveWant]bool

func (p plans) keep(w nodes.ArchiveWant) bool { return p[w] }

// cached lists the files of s's cache, sorted.
func cached(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.Dir, "templates"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func cacheFile(digest string) string { return strings.TrimPrefix(digest, "sha256:") + ".tar" }

// heldLen is how many archives s holds in memory.
func heldLen(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// fetchAll fetches every want and waits until each is got and no read
// is under way: a ref of a digest another ref got is handed the archive
// at once (arrival) while its own read ends in the background.
func fetchAll(t *testing.T, f *Fetcher, wants ...nodes.ArchiveWant) {
	t.Helper()
	var modules []string
	for _, w := range wants {
		f.Fetch(w)
		modules = append(modules, w.Module)
	}
	got, _ := collect(t, f, 5*time.Second, modules...)
	for m, r := range got {
		if r.Err != nil {
			t.Fatalf("%s: %v", m, r.Err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.store.mu.Lock()
		n := len(f.store.reads)
		f.store.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d reads still under way 5 s after every want was got", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// F1: an archive no current plan names leaves the client's memory and its
// cache; one that two plans name stays while either does; one named again
// after it was dropped is fetched again and used.
func TestRetainDropsWhatNoPlanNamesFromMemoryAndDisk(t *testing.T) {
	one := makeTar(t, false, file("t", "one"))
	two := makeTar(t, false, file("t", "two"))
	refOne, pathOne := writeArchive(t, "one.tar", one)
	refTwo, _ := writeArchive(t, "two.tar", two)
	refShared, _ := writeArchive(t, "shared.tar", one) // the same digest elsewhere
	a := nodes.ArchiveWant{Module: "a", Ref: refOne, Digest: digestOf(one)}
	b := nodes.ArchiveWant{Module: "b", Ref: refShared, Digest: digestOf(one)}
	c := nodes.ArchiveWant{Module: "c", Ref: refTwo, Digest: digestOf(two)}
	f := newFetcher(t)
	s := f.store
	fetchAll(t, f, a, b, c)
	both := []string{cacheFile(a.Digest), cacheFile(c.Digest)}
	slices.Sort(both)

	f.Retain(plans{a: true, b: true, c: true}.keep)
	if n, files := heldLen(s), cached(t, s); n != 2 || !slices.Equal(files, both) {
		t.Fatalf("every plan here: %d held, cache %v; want 2, %v", n, files, both)
	}
	// a leaves; b names the same digest: it stays.
	f.Retain(plans{b: true, c: true}.keep)
	if n, files := heldLen(s), cached(t, s); n != 2 || !slices.Equal(files, both) {
		t.Fatalf("a left, b names its digest: %d held, cache %v; want 2, %v", n, files, both)
	}
	// b moves on too: the digest is named by no plan.
	f.Retain(plans{c: true}.keep)
	if n, files := heldLen(s), cached(t, s); n != 1 || !slices.Equal(files, []string{cacheFile(c.Digest)}) {
		t.Fatalf("only c left: %d held, cache %v", n, files)
	}
	// a comes back to its archive: fetched again (the source still has it).
	fetchAll(t, f, a)
	f.Retain(plans{a: true, c: true}.keep)
	if n, files := heldLen(s), cached(t, s); n != 2 || !slices.Equal(files, both) {
		t.Fatalf("a back: %d held, cache %v; want 2, %v", n, files, both)
	}
	// Fetched again it was, not handed from memory: its source gone, a
	// fresh store (a restart) reads it from the cache.
	os.Remove(pathOne)
	if got, err := (&Store{Dir: s.Dir}).Get(context.Background(), refOne, a.Digest); err != nil || string(got["t"]) != "one" {
		t.Fatalf("a's archive from the cache: %q, %v", got, err)
	}
	f.Retain(plans{}.keep)
	if n, files := heldLen(s), cached(t, s); n != 0 || len(files) != 0 {
		t.Fatalf("no plan: %d held, cache %v", n, files)
	}
}

// F1: one module moved to a new archive many times, and many modules each
// with its own archive come and go: the store holds what the plans name now,
// not every archive ever read.
func TestRetainKeepsOnlyTheCurrentRevisions(t *testing.T) {
	f := newFetcher(t)
	s := f.store
	var stay nodes.ArchiveWant
	for i := range 30 {
		data := makeTar(t, false, file("t", fmt.Sprint("rev ", i)))
		ref, _ := writeArchive(t, "t.tar", data)
		rev := nodes.ArchiveWant{Module: "web", Ref: ref, Digest: digestOf(data)}
		visitor := nodes.ArchiveWant{Module: fmt.Sprint("visitor-", i), Ref: ref, Digest: digestOf(data)}
		if i == 0 {
			stay = rev
		}
		fetchAll(t, f, rev, visitor)
		f.Retain(plans{stay: true, rev: true}.keep) // the visitor left again
	}
	if n, files := heldLen(s), cached(t, s); n != 2 || len(files) != 2 {
		t.Fatalf("after 30 revisions: %d held, %d cached; want 2 (the first, kept by another plan, and the last)", n, len(files))
	}
}

// A digest one plan keeps named while many others name it and leave: the
// wants remembered for it do not pile up.
func TestRetainForgetsTheUsersOfAnArchiveThatLeft(t *testing.T) {
	data := makeTar(t, false, file("t", "shared"))
	ref, _ := writeArchive(t, "t.tar", data)
	f := newFetcher(t)
	s := f.store
	base := nodes.ArchiveWant{Module: "base", Ref: ref, Digest: digestOf(data)}
	fetchAll(t, f, base)
	for i := range 100 {
		fetchAll(t, f, nodes.ArchiveWant{Module: fmt.Sprint("m-", i), Ref: ref, Digest: base.Digest})
		f.Retain(plans{base: true}.keep)
	}
	s.mu.Lock()
	users := len(s.got[strings.TrimPrefix(base.Digest, "sha256:")].users)
	s.mu.Unlock()
	if users > 4 {
		t.Fatalf("%d wants remembered for an archive one plan names", users)
	}
}

// F1 (d): at start the cache holds what an earlier run kept. The first
// Retain (the daemon's, once every plan is read) removes the archives no
// fetch is for and temporary files a cut write left; an archive a fetch
// kept is for (got, or still to be read) stays, and so does anything that
// is not the cache's. Later Retains touch no file they did not drop.
func TestTheFirstRetainSweepsWhatAnEarlierRunCached(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "templates")
	os.MkdirAll(tdir, 0o700)
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(tdir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wanted := makeTar(t, false, file("t", "wanted"))
	old := makeTar(t, false, file("t", "old"))
	toRead := makeTar(t, false, file("t", "to read"))
	for _, d := range [][]byte{wanted, old, toRead} {
		write(cacheFile(digestOf(d)), d)
	}
	tmp := "." + cacheFile(digestOf(old)) + "8675309"
	write(tmp, []byte("cut short"))
	write("README", []byte("not the cache's"))

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &Store{Dir: dir}
	f := NewFetcher(ctx, s, backoff.Doubling{Min: 20 * time.Millisecond, Max: 80 * time.Millisecond})
	// Its source is gone: only the cache has it.
	w := nodes.ArchiveWant{Module: "web", Ref: "file:///nonexistent/t.tar", Digest: digestOf(wanted)}
	fetchAll(t, f, w)
	// A fetch of toRead still to come (busy) keeps its file too.
	s.retain(plans{w: true}.keep, map[string]bool{strings.TrimPrefix(digestOf(toRead), "sha256:"): true}, true)
	want := []string{"README", cacheFile(digestOf(toRead)), cacheFile(digestOf(wanted))}
	slices.Sort(want)
	if files := cached(t, s); !slices.Equal(files, want) {
		t.Fatalf("after the first retain the cache holds %v, want %v", files, want)
	}
	// The Fetcher sweeps on its first Retain alone: no fetch of toRead
	// came, so it goes now.
	write(cacheFile(digestOf(old)), old)
	f.Retain(plans{w: true}.keep)
	want = []string{"README", cacheFile(digestOf(wanted))}
	slices.Sort(want)
	if files := cached(t, s); !slices.Equal(files, want) {
		t.Fatalf("after the Fetcher's first Retain the cache holds %v, want %v", files, want)
	}
	write(cacheFile(digestOf(old)), old)
	f.Retain(plans{w: true}.keep)
	if files := cached(t, s); !slices.Contains(files, cacheFile(digestOf(old))) {
		t.Fatalf("a later Retain swept the cache: %v", files)
	}
}

// F1 (c): an archive with a read under way (another ref of its digest) is
// not dropped, nor its cache file removed under the read or write; the
// next Retain once the read is done drops it.
func TestRetainLeavesAnArchiveBeingReadForALaterRetain(t *testing.T) {
	data := makeTar(t, false, file("t", "x"))
	ref, _ := writeArchive(t, "t.tar", data)
	f := newFetcher(t)
	s := f.store
	w := nodes.ArchiveWant{Module: "web", Ref: ref, Digest: digestOf(data)}
	fetchAll(t, f, w)
	h := strings.TrimPrefix(w.Digest, "sha256:")
	s.mu.Lock()
	s.reads[h]++ // a read of another ref of the digest, under way
	s.mu.Unlock()
	f.Retain(plans{}.keep)
	if n, files := heldLen(s), cached(t, s); n != 1 || len(files) != 1 {
		t.Fatalf("dropped under a read: %d held, cache %v", n, files)
	}
	s.mu.Lock()
	s.reads[h]--
	s.mu.Unlock()
	f.Retain(plans{}.keep)
	if n, files := heldLen(s), cached(t, s); n != 0 || len(files) != 0 {
		t.Fatalf("once read: %d held, cache %v", n, files)
	}
}

// Gets and Retains of the same digests at once (go test -race): every Get
// gets the archive, and once the last Retain keeps nothing, nothing is
// held and the cache is empty.
func TestRetainWhileGetting(t *testing.T) {
	var wants []nodes.ArchiveWant
	for i := range 4 {
		data := makeTar(t, i%2 == 0, file("t", fmt.Sprint(i)))
		ref, _ := writeArchive(t, "t.tar", data)
		wants = append(wants, nodes.ArchiveWant{Module: fmt.Sprint("m", i), Ref: ref, Digest: digestOf(data)})
	}
	s := &Store{Dir: t.TempDir()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range wants {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got, err := s.get(context.Background(), w); err != nil || len(got) != 1 {
					t.Errorf("%s: %q %v", w.Module, got, err)
					return
				}
			}
		})
	}
	for i := range 200 {
		s.retain(plans{wants[i%4]: true}.keep, nil, i == 0)
	}
	close(stop)
	wg.Wait()
	s.retain(plans{}.keep, nil, false)
	if n, files := heldLen(s), cached(t, s); n != 0 || len(files) != 0 {
		t.Fatalf("nothing wanted: %d held, cache %v", n, files)
	}
}

func TestCacheName(t *testing.T) {
	h := strings.Repeat("0a", 32)
	for name, want := range map[string]bool{
		h + ".tar": true, "." + h + ".tar123": true,
		h + ".tar1": false, "." + h + ".tar": false, "." + h + ".tarx": false, h + ".tgz": false,
		strings.ToUpper(h) + ".tar": false, "README": false, h[:62] + ".tar": false,
	} {
		if got, ok := cacheName(name); ok != want || (ok && got != h) {
			t.Errorf("cacheName(%q) = %q, %v", name, got, ok)
		}
	}
}

// An archive that cannot be used (an unsafe member) is not kept in the
// cache, where nothing would ever take it off the disk; one found there
// (an earlier run, other limits) is removed.
func TestAnArchiveThatCannotBeUsedIsNotCached(t *testing.T) {
	data := makeTar(t, false, file("../evil", "x"))
	ref, _ := writeArchive(t, "t.tar", data)
	s := &Store{Dir: t.TempDir()}
	_, err := s.Get(context.Background(), ref, digestOf(data))
	wantErr(t, err, ErrUnsafeMember)
	if files := cached(t, s); len(files) != 0 {
		t.Fatalf("an unusable archive was cached: %v", files)
	}
	os.MkdirAll(filepath.Join(s.Dir, "templates"), 0o700)
	os.WriteFile(filepath.Join(s.Dir, "templates", cacheFile(digestOf(data))), data, 0o600)
	_, err = s.Get(context.Background(), "file:///nonexistent/t.tar", digestOf(data))
	wantErr(t, err, ErrUnsafeMember)
	if files := cached(t, s); len(files) != 0 {
		t.Fatalf("an unusable archive left in the cache: %v", files)
	}
}

// Retain runs after every batch: with nothing moved it asks keep once per
// archive held, and walks nothing else.
func BenchmarkRetainNothingMoved(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint("archives=", n), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := &Store{Dir: b.TempDir(), got: map[string]*held{}, inFlight: map[refDigest]*reading{}, reads: map[string]int{}}
			f := NewFetcher(ctx, s, backoff.Doubling{Min: time.Second, Max: time.Second})
			plan := map[string]nodes.ArchiveWant{} // by module, as NodeGraph.WantsArchive reads it
			for i := range n {
				d := fmt.Sprintf("%064x", i)
				for j := range 2 { // two modules of each archive
					w := nodes.ArchiveWant{Module: fmt.Sprint("m-", i, "-", j), Ref: "file:///t/" + d, Digest: "sha256:" + d}
					s.useLocked(w, d, map[string][]byte{})
					plan[w.Module] = w
				}
			}
			calls := 0
			keep := func(w nodes.ArchiveWant) bool {
				calls++
				t, ok := plan[w.Module]
				return ok && t.Digest == w.Digest && t.Ref == w.Ref
			}
			f.Retain(keep)
			calls = 0
			b.ReportAllocs()
			for b.Loop() {
				f.Retain(keep)
			}
			b.ReportMetric(float64(calls)/float64(b.N), "keeps/op")
		})
	}
}

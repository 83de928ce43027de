package archive

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A cache file damaged on disk (truncated, here: a crash, a full disk, a
// hand's edit) is neither used nor passed over in silence: CacheDamaged is
// told, naming the file and the ref, the file is removed (no later start
// takes it for a cached archive), and the archive is fetched again from
// its ref and kept anew. Before, readCache took it for no cache at all,
// and the state dir's damage was said nowhere.
func TestADamagedCacheFileIsWarnedOfAndFetchedAgain(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tgz", data)
	dir := t.TempDir()
	if _, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "templates", strings.TrimPrefix(digestOf(data), "sha256:")+".tar")
	if err := os.Truncate(cache, int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var told []string
	s := &Store{Dir: dir, CacheDamaged: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, err.Error())
	}}
	got, err := s.Get(context.Background(), ref, digestOf(data))
	if err != nil {
		t.Fatalf("Get with a damaged cache file and its ref there: %v", err)
	}
	if !maps.EqualFunc(got, sampleWant, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("members = %q, want %q", got, sampleWant)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0], cache) || !strings.Contains(told[0], ref) {
		t.Fatalf("CacheDamaged told %q; want once, naming %s and %s", told, cache, ref)
	}
	if b, _ := os.ReadFile(cache); string(b) != string(data) {
		t.Fatal("the cache file was not fetched again and kept anew")
	}
}

// A damaged cache file whose ref is gone is removed all the same: the
// module waits for its archive (ErrNotThereYet), and the state dir holds
// no file a later start would take for the archive (Fetcher.FetchingLocal
// asks the cache by name).
func TestADamagedCacheFileIsRemovedWhileItsRefIsGone(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, path := writeArchive(t, "templates.tgz", data)
	dir := t.TempDir()
	if _, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "templates", strings.TrimPrefix(digestOf(data), "sha256:")+".tar")
	if err := os.WriteFile(cache, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	var told []string
	s := &Store{Dir: dir, CacheDamaged: func(err error) { told = append(told, err.Error()) }}
	_, err := s.Get(context.Background(), ref, digestOf(data))
	wantErr(t, err, ErrNotThereYet, ref, path)
	if len(told) != 1 || !strings.Contains(told[0], cache) {
		t.Fatalf("CacheDamaged told %q; want once, naming %s", told, cache)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Fatalf("the damaged cache file is still there: %v", err)
	}
	if s.holds(digestOf(data)) {
		t.Fatal("the store says it holds an archive whose cache file was damaged")
	}
}

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

// A cache that cannot be written (Dir under a regular file) fails no Get:
// the archive fetched and checked is returned from memory, and CacheFailed
// is told why it was not kept, naming the ref.
func TestAnArchiveTheCacheCannotKeepIsReturnedAndTheFailureReported(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, _ := writeArchive(t, "templates.tgz", data)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var failed []string
	s := &Store{Dir: filepath.Join(file, "state"), CacheFailed: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		failed = append(failed, err.Error())
	}}
	got, err := s.Get(context.Background(), ref, digestOf(data))
	if err != nil {
		t.Fatalf("Get failed for the cache: %v", err)
	}
	if !maps.EqualFunc(got, sampleWant, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("members = %q, want %q", got, sampleWant)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 1 || !strings.Contains(failed[0], ref) || !strings.Contains(failed[0], "not a directory") {
		t.Fatalf("CacheFailed told %q; want once, naming the ref and why", failed)
	}
}

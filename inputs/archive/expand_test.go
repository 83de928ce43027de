package archive

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// An archive in the cache whose read waited for a slot (MaxExpanding
// others being read) until its try timed out was never read: nothing is
// known wrong with it, and it stays in the cache. A later try reads it
// from there, the source gone.
func TestACachedArchiveWhoseReadWaitedTooLongStaysCached(t *testing.T) {
	data := makeTar(t, true, sampleMembers()...)
	ref, path := writeArchive(t, "templates.tgz", data)
	dir := t.TempDir()
	if _, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	st := &Store{Dir: dir}
	for range MaxExpanding {
		st.slots() <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := st.Get(ctx, ref, digestOf(data))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read with no slot free until its deadline: %v", err)
	}
	// The read, in a goroutine of its own, ends too (it found no slot).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st.mu.Lock()
		n := len(st.reads)
		st.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the read did not end within 10s")
		}
	}
	for range MaxExpanding {
		<-st.slots()
	}
	got, err := (&Store{Dir: dir}).Get(context.Background(), ref, digestOf(data))
	if err != nil {
		t.Fatalf("the cached archive is gone after a read that waited: %v", err)
	}
	if len(got) != len(sampleWant) {
		t.Fatalf("got %d members, want %d", len(got), len(sampleWant))
	}
}

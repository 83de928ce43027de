package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// One holder at a time: a second Take is told the first's note; once the
// first releases, a new Take succeeds though the lock file stays.
func TestOneHolderAtATime(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	release, err := Take(dir, "first", "node ace")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir made as %v, %v; want 0700", fi.Mode(), err)
	}
	_, err = Take(dir, "second", "")
	var inUse *InUseError
	if !errors.As(err, &inUse) || inUse.Holder == nil || inUse.Holder.What != "first" || inUse.Dir != dir {
		t.Fatalf("second Take: %v (%+v), want in use by first", err, inUse)
	}
	if want := fmt.Sprintf("state dir %s is in use by another second (pid %d, node ace)", dir, os.Getpid()); err.Error() != want {
		t.Errorf("said %q, want %q", err, want)
	}
	release()
	release, err = Take(dir, "third", "")
	if err != nil {
		t.Fatalf("Take after release: %v", err)
	}
	defer release()
	if b, _ := os.ReadFile(filepath.Join(dir, Name)); string(b) != fmt.Sprintf(`{"pid":%d,"what":"third"}`, os.Getpid()) {
		t.Errorf("lock file holds %q", b)
	}
}

// A directory under a regular file cannot be used: an error, not InUse.
func TestAnUnusableDirIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Take(filepath.Join(file, "sub"), "x", "")
	var inUse *InUseError
	if err == nil || errors.As(err, &inUse) {
		t.Fatalf("Take under a file: %v", err)
	}
}

// A directory removed while held is taken again by Again, so a second
// process started on its path is refused as before; one held as it was
// says nothing was made again.
func TestADirectoryRemovedWhileHeldIsTakenAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	h, err := Hold(dir, "mesh-provisioner-client", "node ace")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if remade, err := h.Again(); remade || err != nil {
		t.Fatalf("Again of a directory held as it was: %v, %v", remade, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if remade, err := h.Again(); !remade || err != nil {
		t.Fatalf("Again of a directory removed: %v, %v; want it made and taken again", remade, err)
	}
	if _, err := Take(dir, "mesh-provisioner-client", "node bee"); !errors.As(err, new(*InUseError)) {
		t.Fatalf("a second taker after Again: %v, want an *InUseError", err)
	}
}

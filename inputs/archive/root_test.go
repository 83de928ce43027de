package archive

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// --templates-root: a file:// ref below the root is read; one outside it,
// by its path or through a symbolic link, is refused naming the ref.
func TestARootConfinesFileRefs(t *testing.T) {
	data := makeTar(t, false, sampleMembers()...)
	root := t.TempDir()
	inside := filepath.Join(root, "sub", "t.tar")
	if err := os.MkdirAll(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	outsideRef, outside := writeArchive(t, "t.tar", data)
	link := filepath.Join(root, "link.tar")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	newStore := func() *Store { return &Store{Root: root} } // no cache: each Get reads

	if got, err := newStore().Get(ctx, "file://"+inside, digestOf(data)); err != nil || len(got) != len(sampleWant) {
		t.Fatalf("a ref below the root: %d members, %v", len(got), err)
	}
	_, err := newStore().Get(ctx, outsideRef, digestOf(data))
	wantErr(t, err, ErrOutsideRoot, outsideRef, root)
	if !Broken(err) {
		t.Errorf("a ref outside the root is final, not waited on: %v", err)
	}
	for _, ref := range []string{"file://" + root + "/../x/t.tar", "file://" + link} {
		if _, err := newStore().Get(ctx, ref, digestOf(data)); err == nil {
			t.Errorf("%s read, want refused", ref)
		} else {
			wantErr(t, err, nil, ref)
		}
	}
	if got, err := (&Store{}).Get(ctx, outsideRef, digestOf(data)); err != nil || len(got) != len(sampleWant) {
		t.Fatalf("no root: a ref anywhere is read (%d members, %v)", len(got), err)
	}
}

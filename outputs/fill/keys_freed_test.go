package fill

import (
	"errors"
	"net/http"
	"path/filepath"
	"testing"
)

// A key a module's declaration no longer names is free for another module
// (SPEC §4.3 r2: a key claimed twice is refused only while both name it).
func TestAKeyDroppedFromADeclarationIsFreeForAnother(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("A=1\nK=a\n")}}})
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("A=1\n")}}})
	if _, err := c.Fill(t.Context(), Request{Module: "b", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("K=b\n")}}}); err != nil {
		t.Fatalf("b taking K after a dropped it: %v", err)
	}
	t.Logf("%q", readFile(t, filepath.Join(root, "etc/env")))
	// and a module leaving frees its keys
	fillOK(t, c, Request{Module: "c", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("C=1\n")}}})
	if _, err := c.Delete(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fill(t.Context(), Request{Module: "d", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("C=2\n")}}}); err != nil {
		t.Fatalf("d taking C after c left: %v", err)
	}
	// an owned path freed by a whole request is free for a seed of another
	fillOK(t, c, Request{Module: "e", Whole: true, Files: []File{{Path: "/etc/e", Form: FormOwned, Content: []byte("e\n")}}})
	c.Fill(t.Context(), Request{Module: "e", Whole: true, Files: []File{}})
	if _, err := c.Fill(t.Context(), Request{Module: "f", Whole: true, Files: []File{{Path: "/etc/e", Form: FormSeed, Content: []byte("f\n")}}}); err != nil {
		t.Fatalf("f seeding e's freed path: %v", err)
	}
	mustRead(t, filepath.Join(root, "etc/e"), "f\n")
}

// A key another module manages is a 409 naming the path, the key and the
// holder (as a path another module holds names path and holder), so the
// client tells its own race with a module that left from a real clash;
// before, it carried the text alone.
func TestAKeyHeldElsewhereIsA409NamingPathKeyAndHolder(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("K=a\n")}}})
	_, err := c.Fill(t.Context(), Request{Module: "b", Whole: true, Files: []File{{Path: "/etc/env", Form: FormManagedKeys, Content: []byte("K=b\n")}}})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusConflict || se.Held != "/etc/env" || se.Holder != "a" || se.HeldKey != "K" {
		t.Fatalf("b managing a's key: %#v, want a 409 naming /etc/env, key K and holder a", err)
	}
}

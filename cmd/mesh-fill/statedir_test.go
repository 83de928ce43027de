package main

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestAStateDirThatIsTheRootIsRefusedAtStart: --state-dir naming --root
// (or a symlink to it) exits 2 naming both flags, before anything is made
// in the root. Before, it started and answered every request 403 (no
// request may write into the state dir). A state dir below the root, or a
// root below the state dir, serves: the paths outside the state dir are
// written.
func TestAStateDirThatIsTheRootIsRefusedAtStart(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, state := range []string{root, link, root + "/"} {
		p := start(t, "--root", root, "--state-dir", state)
		if code := p.exit(t); code != 2 {
			t.Errorf("--state-dir %s: exit %d, want 2; stderr:\n%s", state, code, p.said())
		}
		for _, want := range []string{"mesh-fill: ", "--state-dir " + state + " is --root " + root, "every request would be refused"} {
			if !strings.Contains(p.said(), want) {
				t.Errorf("--state-dir %s: stderr does not say %q:\n%s", state, want, p.said())
			}
		}
		if names, _ := os.ReadDir(root); len(names) != 0 {
			t.Errorf("--state-dir %s: made in the root: %v", state, names)
		}
	}

	// the harmless overlaps: the rest of the root is written
	outer := t.TempDir()
	for _, tc := range []struct{ root, state string }{
		{root, filepath.Join(root, "var/lib/mesh-fill")},
		{filepath.Join(outer, "root"), outer},
	} {
		if err := os.MkdirAll(tc.root, 0o755); err != nil {
			t.Fatal(err)
		}
		p := start(t, "--root", tc.root, "--state-dir", tc.state)
		if !p.running() {
			t.Fatalf("--root %s --state-dir %s: exited; stderr:\n%s", tc.root, tc.state, p.said())
		}
		c := &fill.Client{Socket: p.sock}
		if _, err := c.Fill(t.Context(), fill.Request{Module: "m", Whole: true, Files: []fill.File{{Path: "/etc/a.conf", Form: fill.FormOwned, Content: []byte("a\n")}}}); err != nil {
			t.Errorf("--root %s --state-dir %s: %v", tc.root, tc.state, err)
		}
		if b, err := os.ReadFile(filepath.Join(tc.root, "etc/a.conf")); err != nil || string(b) != "a\n" {
			t.Errorf("--root %s --state-dir %s: a.conf %q %v", tc.root, tc.state, b, err)
		}
		_, err := c.Fill(t.Context(), fill.Request{Module: "m", Files: []fill.File{{Path: "/var/lib/mesh-fill/module-x.json", Form: fill.FormOwned, Content: []byte("{}")}}})
		var se *fill.StatusError
		if inside := tc.state == filepath.Join(tc.root, "var/lib/mesh-fill"); inside != (errors.As(err, &se) && se.Status == http.StatusForbidden) {
			t.Errorf("--root %s --state-dir %s: a path into the state dir: %v", tc.root, tc.state, err)
		}
		c.CloseIdle()
	}
}

package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRequestWritesIntoTheStateDir: mesh-fill's state dir is its own:
// its module-*.json files say which files it removes and its pending-*.json
// which units it restarts at start, and its lock keeps a second mesh-fill
// off it. A request naming a path that leads into it (below --root, or
// through a symlinked parent without one) is a 403 naming the path and the
// state dir, whatever --allow says, and nothing of the request is written.
func TestNoRequestWritesIntoTheStateDir(t *testing.T) {
	t.Run("below the root", func(t *testing.T) {
		root := t.TempDir()
		state := filepath.Join(root, "var/lib/mesh-fill")
		c := startServer(t, &Server{Root: root, StateDir: state})
		lock, err := os.Lstat(filepath.Join(state, "lock"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/var/lib/mesh-fill/module-0123.json", "/var/lib/mesh-fill/pending-0123.json",
			"/var/lib/mesh-fill/lock", "/var/lib/mesh-fill/sub/x"} {
			mustNotWriteStateDir(t, c, p, "/ok", filepath.Join(root, "ok"))
		}
		if now, err := os.Lstat(filepath.Join(state, "lock")); err != nil || !os.SameFile(lock, now) {
			t.Errorf("the state dir's lock file was replaced (%v)", err)
		}
		mustAbsent(t, filepath.Join(state, "module-0123.json"))
		mustAbsent(t, filepath.Join(state, "pending-0123.json"))
		mustAbsent(t, filepath.Join(state, "sub"))
	})
	t.Run("without a root", func(t *testing.T) {
		dir := t.TempDir()
		state := filepath.Join(dir, "state")
		c := startServer(t, &Server{StateDir: state})
		if err := os.Symlink(state, filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(state, "pending-0123.json"), filepath.Join(dir, "link/module-0123.json")} {
			mustNotWriteStateDir(t, c, p, filepath.Join(dir, "ok"), filepath.Join(dir, "ok"))
		}
		mustAbsent(t, filepath.Join(state, "module-0123.json"))
		mustAbsent(t, filepath.Join(state, "pending-0123.json"))
		// beside it is fine
		fillOK(t, c, Request{Module: "m", Files: []File{{Path: filepath.Join(dir, "state.json"), Form: FormOwned, Content: []byte("x")}}})
	})
}

// mustNotWriteStateDir fills p after okPath (a path outside the state
// dir, at okOnDisk), and wants a 403 naming p and the state dir, and
// okPath not written.
func mustNotWriteStateDir(t *testing.T, c *Client, p, okPath, okOnDisk string) {
	t.Helper()
	_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{
		{Path: okPath, Form: FormOwned, Content: []byte("ok\n")},
		{Path: p, Form: FormOwned, Content: []byte(`{"module":"x","files":{}}`)},
	}})
	var se *StatusError
	if !errors.As(err, &se) || se.Status != http.StatusForbidden || !strings.Contains(se.Msg, p) || !strings.Contains(se.Msg, "state dir") {
		t.Errorf("%s: want a 403 naming it and the state dir, got %v", p, err)
	}
	mustAbsent(t, okOnDisk)
}

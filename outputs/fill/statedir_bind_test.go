package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTheStateDirBoundIntoTheRootIsRefused: the state dir bind-mounted
// at a path below the root (or reached by any other name a path string
// does not show) is still mesh-fill's own: a request writing there is
// refused (403) naming the state dir, and nothing lands among the state
// files, whatever the path's string says.
func TestTheStateDirBoundIntoTheRootIsRefused(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	mnt := filepath.Join(root, "etc", "bound")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(state, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("cannot bind-mount here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

	c := startServer(t, &Server{Root: root, StateDir: state})
	for _, p := range []string{"/etc/bound/lock", "/etc/bound/module-x.json", "/etc/bound/sub/file"} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: p, Form: FormOwned, Content: []byte("planted\n")}}})
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.Status != http.StatusForbidden {
			t.Errorf("%s: %v, want a 403", p, err)
			continue
		}
		if !strings.Contains(se.Msg, "state dir") || !strings.Contains(se.Msg, p) {
			t.Errorf("%s: refusal %q should name the path and the state dir", p, se.Msg)
		}
	}
	mustAbsent(t, filepath.Join(state, "module-x.json"))
	mustAbsent(t, filepath.Join(state, "sub"))
	if b, err := os.ReadFile(filepath.Join(state, "lock")); err == nil && strings.Contains(string(b), "planted") {
		t.Errorf("the state dir's lock was overwritten")
	}
}

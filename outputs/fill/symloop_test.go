package fill

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAParentSymlinkLoopIs400: a path whose parent directories hold a
// symbolic link loop (a link to itself, or two links to each other) is
// refused 400, the request's to mend, saying so and naming the path; it
// was a 500, as if mesh-fill had failed, retried at every tick.
func TestAParentSymlinkLoopIs400(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "self"), filepath.Join(dir, "self")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "b"), filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	c := startServer(t, &Server{}) // no root: parents' links are resolved
	for _, p := range []string{dir + "/self/x.conf", dir + "/a/x.conf", dir + "/a/deeper/x.conf"} {
		_, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: p, Form: FormOwned, Content: []byte("x\n")}}})
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.Status != http.StatusBadRequest {
			t.Errorf("%s: %v, want a 400", p, err)
			continue
		}
		if !strings.Contains(se.Msg, p) || !strings.Contains(se.Msg, "symbolic link loop") {
			t.Errorf("%s: refusal %q should name the path and the loop", p, se.Msg)
		}
	}
}

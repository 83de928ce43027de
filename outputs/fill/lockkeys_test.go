package fill

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAPathShapedLikeAModulesLockIsRefusedNotWaitedOn: a request takes its
// module's lock ("\x00module <name>") and then the locks of its paths. A
// path that is no path at all, "\x00module m" (refused later for its NUL),
// took the lock of module m: module m's own request naming it waited for
// itself for ever, and every later request of m with it, until mesh-fill
// restarted. Such a path takes no lock: the request is answered 400, and
// the module's next request is served. (The 30 s bound only turns a hang
// into a failure.)
func TestAPathShapedLikeAModulesLockIsRefusedNotWaitedOn(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	for _, module := range []string{"m", "n"} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := c.Fill(ctx, Request{Module: module, Files: []File{{Path: "\x00module m", Form: FormOwned, Content: []byte("x")}}})
		cancel()
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, "NUL") {
			t.Fatalf("module %s naming path \"\\x00module m\": want a 400 saying it holds a NUL, got %v", module, err)
		}
	}
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/f", Form: FormOwned, Content: []byte("x")}}})
	mustRead(t, filepath.Join(root, "f"), "x")
}

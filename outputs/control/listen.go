package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/novox/mesh-provisioner/outputs/unixsock"
)

// Listen binds the control socket at path so that it is never reachable
// with a wider mode than 0600: bound under a temporary name beside path,
// made 0600, only then renamed into place. It refuses when another client
// answers at path, and when path is something else than a socket (a
// stale socket is replaced). Closing the listener leaves path; the server
// removes it.
func Listen(path string) (net.Listener, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	ln, err := unixsock.Listen(path, 0o600)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	return ln, nil
}

// Check says why the control socket cannot be served at path, short of
// binding it: a path too long, something there that is no socket, another
// client answering on it, a directory that cannot be made (it makes it).
// The client's run asks it before it takes the bus, so that such a
// --control is a start error (exit 2) as a state dir in use is; Listen
// asks it again.
func Check(path string) error {
	if err := CheckSocketPath(path); err != nil {
		return err
	}
	if err := notASocket(path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("control socket %s: %w", path, err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		if fillAnswers(path) {
			return errors.New("control socket " + path + ": mesh-fill's fill socket answers on it, not a client's control socket: " +
				"--control names the node-engine's fill socket (that is --fill-socket); name the client's own control socket")
		}
		return errors.New("control socket " + path + ": another client answers on it")
	}
	return nil
}

// fillAnswers is whether what answers on path is mesh-fill's fill socket
// (--control given the fill socket beside it: the two flags swapped): its
// 404 for any other route says so. Anything else, or no answer within a
// second or two, is taken for another client.
func fillAnswers(path string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	code, b, err := NewClient(path, 2*time.Second).Get(ctx, "/healthz")
	if err != nil || code != http.StatusNotFound {
		return false
	}
	var e ErrorBody
	return json.Unmarshal(b, &e) == nil && strings.Contains(e.Error, "fill socket (mesh-fill)") // outputs/fill's route error
}

// notASocket refuses a path that holds something other than a socket: the
// rename into place would replace it, and the stop remove it, so a
// --control mistyped as a file's name (the creds file given to the wrong
// flag) would lose that file. Nothing is done to it; as mesh-fill's
// --socket.
func notASocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket != 0 {
		return nil // nothing there (or a stale socket, replaced); a bind names any other trouble
	}
	what := kindOf(fi)
	if what == "not a socket" {
		what = "a file"
	}
	return fmt.Errorf("control socket %s: %s is there, not a socket: it is left as it is; name another path with --control", path, what)
}

package control

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenIn listens on a unix socket in a fresh directory short enough
// for one.
func listenIn(t *testing.T) (string, net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	return sock, ln
}

// serve answers on a unix socket in a fresh directory short enough for one.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	sock, ln := listenIn(t)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func TestTheClientParsesAnswersAndSaysRefusals(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, Modules{Node: "ace", Modules: []ModuleStatus{{Module: "web", State: "applied", Files: 1, FilesMet: 1}}})
	})
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusNotFound, ErrorBody{Error: "module " + r.URL.Query().Get("module") + " is not on node ace; modules on node ace: web",
			Node: "ace", Modules: []string{"web"}})
	})
	mux.HandleFunc("GET /v1/graph.dot", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	sock := serve(t, mux)
	c := NewClient(sock, 5*time.Second)

	m, err := c.Modules(t.Context())
	if err != nil || m.Node != "ace" || len(m.Modules) != 1 || m.Modules[0].Module != "web" {
		t.Fatalf("%v %+v", err, m)
	}
	_, err = c.Explain(t.Context(), "a b&c")
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Code != http.StatusNotFound || err.Error() != "module a b&c is not on node ace; modules on node ace: web" ||
		len(ae.Body.Modules) != 1 {
		t.Fatalf("%v", err)
	}
	_, err = c.DOT(t.Context(), "")
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "/v1/graph.dot answered 500: boom") {
		t.Fatalf("%v", err)
	}
}

func TestAPathTooLongForAUnixSocketIsSaidSo(t *testing.T) {
	long := "/run/" + strings.Repeat("d", MaxSocketPath-len("/run/c.sock")) + "/c.sock"
	if len(long) != MaxSocketPath+1 {
		t.Fatalf("%d", len(long))
	}
	_, err := NewClient(long, time.Second).Modules(t.Context())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("longer than a unix socket's limit of %d", MaxSocketPath)) {
		t.Fatalf("%v", err)
	}
}

// A --control that names a regular file or a directory is said to be no
// socket, not taken for a daemon that is down.
func TestAControlPathThatIsNoSocketIsSaidSo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{file: "a regular file", dir: "a directory"} {
		_, _, err := NewClient(path, time.Second).Get(t.Context(), "/v1/modules")
		if err == nil || errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), path+" is not a socket ("+kind+")") {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// --control "" (a script's "$SOCK" unset): before, "control socket  does
// not answer: … dial unix: missing address", which reads as a daemon
// hung. It says no socket was named.
func TestAnEmptyControlPathIsSaidPlainly(t *testing.T) {
	_, _, err := NewClient("", time.Second).Get(t.Context(), "/v1/modules")
	if err == nil || !strings.Contains(err.Error(), "no control socket named: --control is empty") || strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("err %v", err)
	}
}

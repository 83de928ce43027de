package fill

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/rs/zerolog"
)

// logFile is a file for a server's log that the test reads while the
// server writes (each write one system call).
type logFile struct{ *os.File }

func newLog(t *testing.T) logFile {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return logFile{f}
}

func (l logFile) String() string {
	b, _ := os.ReadFile(l.Name())
	return string(b)
}

// runUntilStopped serves s on a new socket until stop is called (a
// restart is a new Server on the same StateDir), logging to log.
func runUntilStopped(t *testing.T, s *Server, log logFile) (c *Client, stop func()) {
	t.Helper()
	s.Log = zerolog.New(log)
	sock := filepath.Join(socketDir(t), "fill.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock) }()
	bustest.Eventually(t, 5*time.Second, func() error {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err
	})
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return &Client{Socket: sock, Timeout: 30 * time.Second}, stop
}

// TestARestartKeepsRemovalAndOwnership: what was written for which module
// is read back from --state-dir, so after a restart a whole request still
// removes what it no longer names and another module is still refused a
// path the first holds.
func TestARestartKeepsRemovalAndOwnership(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	log := newLog(t)
	c, stop := runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	fillOK(t, c, Request{Module: "a", Whole: true, Files: []File{
		{Path: "/etc/a/one", Form: FormOwned, Content: []byte("1\n")},
		{Path: "/etc/a/two", Form: FormOwned, Content: []byte("2\n")},
	}})
	stop()
	if files := stateFiles(t, state); len(files) != 1 {
		t.Fatalf("state dir holds %v, want one file for module a", files)
	}

	c, _ = runUntilStopped(t, &Server{Root: root, StateDir: state}, log)
	_, err := c.Fill(t.Context(), Request{Module: "b", Files: []File{{Path: "/etc/a/two", Form: FormOwned, Content: []byte("b\n")}}})
	if se := (*StatusError)(nil); !errors.As(err, &se) || se.Status != http.StatusConflict {
		t.Errorf("b writing a's file after a restart: %v", err)
	}
	resp, err := c.Fill(t.Context(), Request{Module: "a", Whole: true, Files: []File{{Path: "/etc/a/one", Form: FormOwned, Content: []byte("1\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := results(resp.Files); got["/etc/a/two"] != ActionRemoved {
		t.Errorf("answer %v", got)
	}
	mustAbsent(t, filepath.Join(root, "etc/a/two"))
}

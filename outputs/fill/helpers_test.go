package fill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/rs/zerolog"
)

// socketDir is a short directory for unix sockets (paths are limited to
// ~108 bytes, and t.TempDir() can be longer).
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fill")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startServer runs s on a unix socket until the test ends, logging to the
// test, and returns a client for it.
func startServer(t *testing.T, s *Server) *Client {
	t.Helper()
	s.Log = zerolog.New(zerolog.NewTestWriter(t))
	return serveOn(t, s)
}

// serveOn is startServer with s's own logger (a benchmark's prints always).
func serveOn(t testing.TB, s *Server) *Client {
	t.Helper()
	sock := filepath.Join(socketDir(t), "fill.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	bustest.Eventually(t, 5*time.Second, func() error {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
		}
		return err
	})
	return &Client{Socket: sock, Timeout: 30 * time.Second}
}

func fillOK(t *testing.T, c *Client, req Request) Response {
	t.Helper()
	resp, err := c.Fill(context.Background(), req)
	if err != nil {
		t.Fatalf("Fill: %v", err)
	}
	if len(resp.Files) != len(req.Files) {
		t.Fatalf("got %d file results for %d files: %+v", len(resp.Files), len(req.Files), resp)
	}
	return resp
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s should not exist (err %v)", p, err)
	}
}

// mustRead fails the test unless the file at p holds want.
func mustRead(t *testing.T, p, want string) {
	t.Helper()
	if got := readFile(t, p); got != want {
		t.Errorf("%s holds %q, want %q", p, got, want)
	}
}

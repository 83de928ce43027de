package fill

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/rs/zerolog"
)

// TestConnectionsOverTheCapAreAnswered503AtOnce: with MaxConns 3 and
// one request processed at a time, three connections are held (one
// processed, two waiting for its slot); a fourth is answered 503 at once,
// naming the cap, and nothing of it is written, and once the three are
// answered a new request is taken again. Before, every connection was
// taken and held (a goroutine and its buffers each, up to the read
// timeout): a local user able to connect could open thousands.
func TestConnectionsOverTheCapAreAnswered503AtOnce(t *testing.T) {
	root := t.TempDir()
	var processed, waiting atomic.Int32
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	defer open()
	s := &Server{Root: root, MaxRequests: 1, MaxConns: 3}
	s.OnRequest = func(Request) { processed.Add(1); <-gate }
	s.waiting = func() { waiting.Add(1) }
	c := startServerUndialled(t, s)

	var held []net.Conn
	for i := range 3 {
		conn, err := net.Dial("unix", c.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		body := fmt.Sprintf(`{"module":"m%d","files":[{"path":"/held%d","form":"owned","content":"aGkK"}]}`, i, i)
		rawFill(conn, body, len(body))
		held = append(held, conn)
	}
	bustest.Eventually(t, 30*time.Second, func() error {
		if p, w := processed.Load(), waiting.Load(); p != 1 || w != 2 {
			return fmt.Errorf("%d processed, %d waiting, %d connections held", p, w, s.connsHeld.Load())
		}
		return nil
	})

	over, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	body := `{"module":"over","files":[{"path":"/over","form":"owned","content":"aGkK"}]}`
	rawFill(over, body, len(body))
	// a generous deadline: without the cap it waits for a slot (minutes)
	over.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(over), nil)
	if err != nil {
		t.Fatalf("the connection over the cap had no answer: %v", err)
	}
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close ||
		!strings.Contains(string(msg), "3 connections") || !strings.Contains(string(msg), "--max-conns") {
		t.Errorf("over the cap: %d (close %v) %s; want 503 naming the cap of 3 connections and --max-conns, and closed", resp.StatusCode, resp.Close, msg)
	}

	// the client says the same: the 503, not a broken pipe, whenever the
	// server closed before it wrote its request
	for i := range 20 {
		_, err := c.Fill(context.Background(), Request{Module: "over", Files: []File{{Path: "/over", Form: FormOwned, Content: bytes.Repeat([]byte("x"), 1<<20)}}})
		var se *StatusError
		if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || !strings.Contains(se.Msg, "--max-conns") {
			t.Fatalf("fill %d over the cap: %v; want a 503 naming --max-conns", i, err)
		}
	}

	open()
	for i, conn := range held {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("held connection %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("held connection %d: %d, want 200", i, resp.StatusCode)
		}
		conn.Close()
	}
	mustAbsent(t, filepath.Join(root, "over"))
	// the held ones gone, a new connection is taken
	bustest.Eventually(t, 30*time.Second, func() error {
		_, err := c.Fill(context.Background(), Request{Module: "after", Files: []File{{Path: "/after", Form: FormOwned, Content: []byte("x\n")}}})
		return err
	})
	mustRead(t, filepath.Join(root, "after"), "x\n")
}

// startServerUndialled is startServer without its dial to see the server
// listening (a connection held for a moment, which counts): it waits for
// the socket to be there, which it is only once listened on (unixsock).
func startServerUndialled(t *testing.T, s *Server) *Client {
	t.Helper()
	s.Log = zerolog.New(zerolog.NewTestWriter(t))
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
		_, err := os.Lstat(sock)
		return err
	})
	return &Client{Socket: sock, Timeout: 30 * time.Second}
}

package fill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestBodiesSentSlowlyHoldNoSlot: as many peers as --max-requests each
// send a fill's head and then its body a byte at a time; a fill sent
// meanwhile is answered at once, and the slow ones are still being read.
// Before, each slow one took a slot as its head was read and held it
// while its body came, up to the read timeout (2 minutes): every other
// fill of the node waited that long.
func TestBodiesSentSlowlyHoldNoSlot(t *testing.T) {
	root := t.TempDir()
	s := &Server{Root: root}
	c := startServer(t, s)
	c.Timeout = 20 * time.Second // far less than the read timeout a slow body held a slot for

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	trickled := make(chan error, DefaultMaxRequests)
	for i := range DefaultMaxRequests {
		conn, err := net.Dial("unix", c.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", FillPath)
		go func() {
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					trickled <- nil
					return
				case <-tick.C:
				}
				if _, err := conn.Write([]byte(" ")); err != nil {
					trickled <- fmt.Errorf("slow peer %d: closed by mesh-fill while it sent: %w", i, err)
					return
				}
			}
		}()
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := s.connsHeld.Load(); n < DefaultMaxRequests {
			return fmt.Errorf("%d connections held", n)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond) // their heads read

	start := time.Now()
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/a.conf", Form: FormOwned, Content: []byte("a\n")}}})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the fill took %s beside the slow bodies", took)
	}
	mustRead(t, filepath.Join(root, "a.conf"), "a\n")
	stop()
	for range DefaultMaxRequests {
		if err := <-trickled; err != nil {
			t.Error(err)
		}
	}
}

// TestBodiesHeldAreBounded: the bytes of the bodies read and not yet
// decoded are bounded (by MaxRequests bodies of MaxBody; less here): a
// body that would take them past it is answered 503 naming
// --max-requests, and nothing of it written; once the others are let go,
// it is filled, and no byte is counted held after.
func TestBodiesHeldAreBounded(t *testing.T) {
	root := t.TempDir()
	s := &Server{Root: root, bodyBytesMax: 4 << 20}
	c := startServer(t, s)

	held, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	fmt.Fprintf(held, "POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", FillPath, 3<<20)
	held.Write(bytes.Repeat([]byte(" "), 5<<19)) // 2.5 MiB of 3, and no more
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := s.bodyBytes.Load(); n < 3<<20 {
			return fmt.Errorf("%d bytes held", n)
		}
		return nil
	})

	req := Request{Module: "m", Files: []File{{Path: "/big", Form: FormOwned, Content: bytes.Repeat([]byte("x"), 2<<20)}}}
	_, err = c.Fill(t.Context(), req)
	se, ok := errors.AsType[*StatusError](err)
	if !ok || se.Status != http.StatusServiceUnavailable || !strings.Contains(se.Msg, "--max-requests") {
		t.Fatalf("a body past the bytes held: %v; want a 503 naming --max-requests", err)
	}
	mustAbsent(t, filepath.Join(root, "big"))

	held.Close()
	bustest.Eventually(t, 10*time.Second, func() error {
		_, err := c.Fill(t.Context(), req)
		return err
	})
	if got := readFile(t, filepath.Join(root, "big")); len(got) != 2<<20 {
		t.Errorf("big holds %d bytes, want %d", len(got), 2<<20)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := s.bodyBytes.Load(); n != 0 {
			return fmt.Errorf("%d bytes still counted held", n)
		}
		return nil
	})
}

// TestABodyThatStopsIsGivenUpOnSoon: a peer that stops sending its body
// is answered 408 and closed once bodyStall (10 s) has passed without a
// byte of it, not the read timeout (2 minutes), and nothing of it is
// written.
func TestABodyThatStopsIsGivenUpOnSoon(t *testing.T) {
	defer func(was time.Duration) { bodyStall = was }(bodyStall)
	bodyStall = 300 * time.Millisecond
	root := t.TempDir()
	c := startServer(t, &Server{Root: root}) // the read timeout left at 2 minutes
	conn, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rawFill(conn, oneFile, 20)
	closedWithin(t, conn, 10*time.Second)
	mustAbsent(t, filepath.Join(root, "a"))
}

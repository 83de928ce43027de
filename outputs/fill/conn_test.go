package fill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// Requests one after another go over one connection, kept between them.
func TestRequestsOneAfterAnotherShareOneConnection(t *testing.T) {
	root := t.TempDir()
	sock := filepath.Join(socketDir(t), "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &http.Server{Handler: (&Server{Root: root}).Handler(), ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := &Client{Socket: sock, Timeout: 10 * time.Second}
	for _, v := range []string{"one", "two", "three"} {
		fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/a", Form: FormOwned, Content: []byte(v)}}})
	}
	if _, err := c.Delete(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	mustAbsent(t, filepath.Join(root, "etc/a"))
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for four requests one after another, want 1", n)
	}
}

// mesh-fill restarted between two fills (its socket made again at the same
// path): the connection kept from the first is dead, and the second fill
// still lands, over a new one.
func TestAFillLandsAfterMeshFillRestarted(t *testing.T) {
	root := t.TempDir()
	sock := filepath.Join(socketDir(t), "fill.sock")
	serve := func() (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- (&Server{Root: root, Log: zerolog.New(zerolog.NewTestWriter(t))}).Serve(ctx, sock) }()
		bustest.Eventually(t, 5*time.Second, func() error {
			c, err := net.Dial("unix", sock)
			if err == nil {
				c.Close()
			}
			return err
		})
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	c := &Client{Socket: sock, Timeout: 10 * time.Second}
	stop := serve()
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/a", Form: FormOwned, Content: []byte("before")}}})
	if len(c.idle) != 1 {
		t.Fatalf("%d connections kept after a fill, want 1", len(c.idle))
	}
	stop()
	stop = serve()
	defer stop()
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/a", Form: FormOwned, Content: []byte("after")}}})
	mustRead(t, filepath.Join(root, "etc/a"), "after")
}

// A request cut off by its context says so, and its connection is not
// kept (its answer may still come).
func TestAFillCutOffIsNotKept(t *testing.T) {
	sock := filepath.Join(socketDir(t), "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	asked := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Read(make([]byte, 1)) // the request has come; no answer ever goes
		asked <- c
	}()
	c := &Client{Socket: sock, Timeout: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		conn := <-asked
		cancel()
		t.Cleanup(func() { conn.Close() })
	}()
	_, err = c.Fill(ctx, Request{Module: "m"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a fill cut off: %v", err)
	}
	if len(c.idle) != 0 {
		t.Errorf("%d connections kept after a fill cut off", len(c.idle))
	}
}

// The bytes of a request, a secret's included, are not kept in the
// connection's buffers once it is answered.
func TestAKeptConnectionHoldsNoRequestBytes(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	secret := []byte("s3cr3t-value-of-the-vault")
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/secret", Form: FormOwned, Content: secret}}})
	if len(c.idle) != 1 {
		t.Fatalf("%d connections kept", len(c.idle))
	}
	cn := c.idle[0]
	b := cn.body.Bytes()
	if all := b[:cap(b)]; bytes.Contains(all, secret) || bytes.Contains(all, []byte("czNjcjN0")) {
		t.Error("the kept connection's request buffer still holds the secret")
	}
}

// A whole module's request (a cold start's, a refill's) leaves its
// connection with no more than keptBody of room for the next, which a
// change's small request fits: a kept connection does not hold its
// largest request's room (issue 20).
func TestAKeptConnectionKeepsLittleRoomAfterALargeRequest(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	var files []File
	for i := range 40 {
		files = append(files, File{Path: fmt.Sprintf("/etc/big/%d", i), Form: FormOwned, Content: bytes.Repeat([]byte("x"), 4096)})
	}
	fillOK(t, c, Request{Module: "m", Files: files})
	if len(c.idle) != 1 {
		t.Fatalf("%d connections kept", len(c.idle))
	}
	if room := c.idle[0].body.Cap(); room > keptBody {
		t.Errorf("the kept connection holds %d bytes of room after a %d KB request, want ≤ %d", room, 40*4, keptBody)
	}
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/big/0", Form: FormOwned, Content: []byte("small")}}})
	if room := c.idle[0].body.Cap(); room == 0 || room > keptBody {
		t.Errorf("after a small request the kept connection holds %d bytes of room, want its request's (≤ %d)", room, keptBody)
	}
}

// Requests at once, each over a connection of its own, each get their own
// answer, as the connections are kept and taken again by the others.
func TestRequestsAtOnceEachGetTheirOwnAnswer(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	const senders, each, files = 16, 6, 20
	errs := make(chan error, senders)
	for i := range senders {
		go func() {
			for n := range each {
				req := Request{Module: fmt.Sprintf("m%d", i)}
				for f := range files {
					p := fmt.Sprintf("/etc/m%d/r%d/f%d", i, n, f)
					req.Files = append(req.Files, File{Path: p, Form: FormOwned, Content: []byte(p)})
				}
				resp, err := c.Fill(context.Background(), req)
				for f := 0; err == nil && f < files; f++ {
					if p := req.Files[f].Path; len(resp.Files) != files || resp.Files[f].Path != p || resp.Files[f].Digest != sha([]byte(p)) {
						err = fmt.Errorf("the answer to %s is %+v", p, resp.Files)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range senders {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

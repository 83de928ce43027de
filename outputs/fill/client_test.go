package fill

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

func TestClientSocketAbsent(t *testing.T) {
	sock := filepath.Join(socketDir(t), "absent.sock")
	c := &Client{Socket: sock, Timeout: 2 * time.Second}
	_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{{Path: "/x", Form: FormOwned, Content: []byte("s3cr3t")}}})
	if err == nil {
		t.Fatal("no error for an absent socket")
	}
	if !strings.Contains(err.Error(), "fill socket "+sock+": not answering") {
		t.Errorf("error %q should name the socket and say it is not answering", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("content in the error: %v", err)
	}
}

func TestClientSocketSilent(t *testing.T) {
	// a socket that accepts but never answers
	sock := filepath.Join(socketDir(t), "silent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	c := &Client{Socket: sock, Timeout: 300 * time.Millisecond}
	_, err = c.Fill(context.Background(), Request{Module: "m"})
	if err == nil || !strings.Contains(err.Error(), sock+": not answering") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent socket: %v", err)
	}
}

func TestConcurrentRequestsAllServed(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{
				{Path: "/shared/keys", Form: FormManagedKeys, Content: []byte("K" + string(rune('a'+i)) + "=1\n")},
			}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	// requests one at a time: every key made it
	if s := readFile(t, filepath.Join(root, "shared/keys")); strings.Count(s, "=1\n") != 8 {
		t.Errorf("lost updates: %q", s)
	}
}

func TestServeRemovesStaleSocketAndStops(t *testing.T) {
	sock := filepath.Join(socketDir(t), "fill.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // a stale socket stays behind

	s := &Server{Root: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, sock) }()
	c := &Client{Socket: sock, Timeout: 5 * time.Second}
	bustest.Eventually(t, 5*time.Second, func() error {
		_, err := c.Fill(context.Background(), Request{Module: "m"})
		return err
	})
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode: %v %v", fi, err)
	}

	// a second server on a live socket refuses
	err = (&Server{}).Serve(context.Background(), sock)
	if err == nil || !strings.Contains(err.Error(), "another server answers") {
		t.Errorf("second server: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	mustAbsent(t, sock)
}

// TestANotAnsweringReasonNamesItsCause: the reason a socket gave no answer
// is the dial's own (before, "%w: %w" unwrapped to nil and every reason
// read "not answering: %!w(<nil>)").
func TestANotAnsweringReasonNamesItsCause(t *testing.T) {
	dir := socketDir(t)
	refusing := filepath.Join(dir, "refusing.sock")
	ln, err := net.Listen("unix", refusing)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, nobody accepts on it
	for _, tc := range []struct{ name, sock, cause string }{
		{"nothing at the path", filepath.Join(dir, "absent.sock"), "connect: no such file or directory"},
		{"nobody accepting", refusing, "connect: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{Socket: tc.sock, Timeout: 2 * time.Second}
			_, err := c.Fill(context.Background(), Request{Module: "m", Files: []File{{Path: "/x", Form: FormOwned, Content: []byte("s3cr3t")}}})
			if err == nil {
				t.Fatal("no error")
			}
			want := "fill socket " + tc.sock + ": not answering: dial unix " + tc.sock + ": " + tc.cause
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			if msg := err.Error(); strings.Contains(msg, "%!") || strings.Contains(msg, "s3cr3t") {
				t.Errorf("error %q holds a format fault or the content", msg)
			}
		})
	}
}

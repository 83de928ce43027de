package quietconn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// pair is a connected pair of sockets of the network, both wrapped.
func pair(t *testing.T, network string) (a, b net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.FailNow()
	}
	a, b = Wrap(c), Wrap(s)
	t.Cleanup(func() { a.Close(); b.Close() })
	if _, ok := a.(*Conn); !ok {
		t.Fatalf("a %s connection was not wrapped: %T", network, a)
	}
	return a, b
}

func TestEveryByteWrittenIsReadInOrder(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			a, b := pair(t, network)
			// 8 MiB is far more than a socket buffers: the writer waits for
			// room (EAGAIN, then the netpoller) many times over.
			want := make([]byte, 8<<20)
			for i := range want {
				want[i] = byte(rand.IntN(256))
			}
			wrote := make(chan error, 1)
			go func() {
				n, err := a.Write(want)
				if err == nil && n != len(want) {
					err = io.ErrShortWrite
				}
				wrote <- err
				a.Close()
			}()
			var got bytes.Buffer
			buf := make([]byte, 7919) // odd reads, smaller than what is there
			for {
				n, err := b.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("read %d bytes that differ from the %d written", got.Len(), len(want))
			}
		})
	}
}

func TestAReadWaitsForBytesToCome(t *testing.T) {
	a, b := pair(t, "unix")
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.Write([]byte("late"))
	}()
	buf := make([]byte, 16)
	n, err := b.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("read %q, %v; want \"late\"", buf[:n], err)
	}
}

func TestADeadlineEndsAReadAsTheNetPackageSays(t *testing.T) {
	_, b := pair(t, "tcp")
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	n, err := b.Read(make([]byte, 8))
	if n != 0 {
		t.Fatalf("read past its deadline said it read %d bytes", n)
	}
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past its deadline: %v, want a timeout", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" {
		t.Fatalf("read past its deadline: %#v, want a *net.OpError of op read", err)
	}
	b.SetReadDeadline(time.Time{})
}

func TestClosingEndsAWaitingRead(t *testing.T) {
	_, b := pair(t, "unix")
	done := make(chan error, 1)
	go func() {
		n, err := b.Read(make([]byte, 8))
		if n != 0 {
			err = fmt.Errorf("read %d bytes of nothing sent (%w)", n, err)
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read of a closed connection: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read went on waiting after its connection was closed")
	}
}

func TestWritingToAPeerThatClosedFails(t *testing.T) {
	a, b := pair(t, "unix")
	b.Close()
	var err error
	for range 100 {
		if _, err = a.Write([]byte("anyone there?")); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("writing to a closed peer: %v, want EPIPE or ECONNRESET", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("writing to a closed peer: %#v, want a *net.OpError of op write", err)
	}
}

func TestAConnectionWithoutADescriptorIsLeftAsItIs(t *testing.T) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	if w := Wrap(c); w != c {
		t.Fatalf("Wrap(net.Pipe()) = %T, want the pipe itself", w)
	}
}

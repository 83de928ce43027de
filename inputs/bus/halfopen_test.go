package bus

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// freezer is a TCP proxy to a bus whose links can be frozen: while frozen
// nothing passes either way and no connection is closed (a half-open
// link: a firewall's state dropped, a peer's host gone).
type freezer struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, to string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go f.pipe(c, up)
			go f.pipe(up, c)
		}
	}()
	return f
}

// pipe copies from src to dst while not frozen; what comes while frozen
// is dropped.
func (f *freezer) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !f.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			return
		}
	}
}

func (f *freezer) url() string { return "nats://" + f.ln.Addr().String() }

// A link to the bus that dies without a word is found by the
// connection's pings (two unanswered: stale), said as a disconnect, and
// the connection comes back by itself once the bus can be reached:
// nats.go's defaults left it unnoticed for up to 6 minutes (an outside
// audit), /healthz saying connected meanwhile.
func TestAHalfOpenLinkToTheBusIsFoundByPingsAndLeft(t *testing.T) {
	was := PingInterval
	PingInterval = 100 * time.Millisecond
	t.Cleanup(func() { PingInterval = was })
	s := bustest.Start(t)
	f := newFreezer(t, s.Addr().String())
	var disconnects, reconnects atomic.Int32
	var logs bustest.Buffer
	nc := connect(t, Options{
		URL: f.url(), Name: "provisioner.ace", Log: zerolog.New(&logs),
		OnDisconnect: func(error) { disconnects.Add(1) },
		OnReconnect:  func() { reconnects.Add(1) },
	})
	if opts := nc.Opts; opts.PingInterval != 100*time.Millisecond || opts.MaxPingsOut != 2 {
		t.Fatalf("pings every %v, %d unanswered: want PingInterval, 2", opts.PingInterval, opts.MaxPingsOut)
	}
	f.frozen.Store(true)
	bustest.Eventually(t, 5*time.Second, func() error {
		if disconnects.Load() == 0 {
			return fmt.Errorf("the frozen link is still taken for connected (%v)", nc.Status())
		}
		return nil
	})
	if !errors.Is(nc.LastError(), nats.ErrStaleConnection) && !strings.Contains(logs.String(), "stale connection") {
		t.Errorf("the disconnect does not say the link went stale: %v\n%s", nc.LastError(), logs.String())
	}
	f.frozen.Store(false)
	bustest.Eventually(t, 10*time.Second, func() error {
		if !nc.IsConnected() || reconnects.Load() == 0 {
			return fmt.Errorf("not back: %v, %d reconnects", nc.Status(), reconnects.Load())
		}
		return nil
	})
	if err := nc.Publish("x", nil); err != nil || nc.Flush() != nil {
		t.Errorf("back, but a publish fails: %v", err)
	}
}

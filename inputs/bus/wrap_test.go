package bus

import (
	"net"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// countingConn counts the bytes written through it.
type countingConn struct {
	net.Conn
	wrote *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.wrote.Add(int64(n))
	return n, err
}

// What Options.Wrap returns is the connection nats.go talks over.
func TestWrapIsGivenTheConnectionToTheBus(t *testing.T) {
	s := bustest.Start(t)
	var wrapped atomic.Int32
	var wrote atomic.Int64
	nc, err := Connect(Options{
		URL:  s.ClientURL(),
		Name: "provisioner.ace",
		Log:  zerolog.Nop(),
		Wrap: func(c net.Conn) net.Conn {
			wrapped.Add(1)
			return countingConn{Conn: c, wrote: &wrote}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	before := wrote.Load()
	if err := nc.Publish("anything", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := wrapped.Load(); n != 1 {
		t.Errorf("Wrap called %d times for one connection, want 1", n)
	}
	if n := wrote.Load() - before; n < 1000 {
		t.Errorf("%d bytes went through the wrapped connection for a 1,000-byte publish", n)
	}
}

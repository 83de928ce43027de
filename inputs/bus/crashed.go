package bus

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// A member of the cluster that crashed (killed, its host's power cut
// with the process table kept … anything but a clean shutdown) says
// nothing to the others, who take it for online until their orphan
// check, five missed 30 s heartbeats (~150 s). Its replica of each
// stream lags, and its lag grows with the stream's writes, which from
// the leader's stream info is what a member catching up looks like
// (replicas.go). It serves no read (a consumer of a stream is served by a
// running server), yet every read waited for it: when the crashed one
// was the very server a client was connected to, the client reconnected
// elsewhere at once, read every bucket again, and each watch waited its
// whole 30 s (an outside audit: changes held 36–43 s, /healthz 200).
//
// What the leader says of a replica does not tell the two apart (a member
// down a while and started again is no more heard by the leader while it
// catches up than one that crashed: d612b68, backed out). What does is
// the member's own client port, where this connection was connected to
// it: a server that refuses TCP connections there is not running (a
// nats-server opens its client port before its routes, so one starting
// again that is not listening yet has no routes and holds no consumer),
// and its replica is gone, not behind. One started again accepts
// connections there, and is waited for while it catches up.
//
// The rule's limits: it knows the address of only the servers this
// connection was connected to (by the server's name in its INFO, at the
// address nats.go connected to), so a crashed member this client was
// never on is waited for as before; only a refused connection (a RST:
// nothing listens) says gone, so a member whose host is gone (no
// answer: the dial times out), or that is frozen (the kernel accepts for
// it) is waited for as before; and an address that is not the member's
// own (a proxy, a load balancer in front of several) refuses for reasons
// of its own — it is trusted to be the member's.

// crashDial bounds a dial of a server's client address: a refusal comes
// in one round trip; no answer within it is no refusal.
const crashDial = 500 * time.Millisecond

// crashLook is how long a dial's answer stands: a server refusing is
// dialed again after it before it is said gone again (it may have been
// started again meanwhile), one accepting before it is said running.
var crashLook = time.Second

// servers is what a connection knows of the servers it was connected to.
type servers struct {
	mu     sync.Mutex
	addr   map[string]string // server name → the address connected to
	dialed map[string]dial   // server name → the last dial of addr
}

// dial is a dial's answer: refused, and when.
type dial struct {
	refused bool
	at      time.Time
}

// serversBy: what each connection knows of the servers it was on.
var serversBy perConn[servers]

// serversOf is nc's servers, made on first use.
func serversOf(nc *nats.Conn) *servers {
	return serversBy.of(nc, func() *servers {
		return &servers{addr: map[string]string{}, dialed: map[string]dial{}}
	})
}

// noteServer records the server nc is connected to, if it is, and the
// address it is connected to it at: Connect calls it at each (re)connect,
// a wait for replicas as it starts.
func noteServer(nc *nats.Conn) {
	name, addr := nc.ConnectedServerName(), nc.ConnectedAddr()
	if name == "" || addr == "" || nc.ConnectedServerName() != name {
		return // not connected, or connected elsewhere since
	}
	s := serversOf(nc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr[name] != addr {
		s.addr[name] = addr
		delete(s.dialed, name)
	}
}

// crashed says whether the server named name, which nc was connected to,
// refuses connections at the address it was connected to it at (dialed
// at most once a crashLook): not running. false for a server nc was
// never connected to, or that accepts, or does not answer in crashDial.
func crashed(ctx context.Context, nc *nats.Conn, name string) bool {
	if nc == nil {
		return false
	}
	s := serversOf(nc)
	s.mu.Lock()
	addr, last := s.addr[name], s.dialed[name]
	s.mu.Unlock()
	if addr == "" {
		return false
	}
	if !last.at.IsZero() && time.Since(last.at) < crashLook {
		return last.refused
	}
	refused := refuses(ctx, addr)
	if ctx.Err() != nil {
		return false // cut short: no answer
	}
	s.mu.Lock()
	if s.addr[name] == addr {
		s.dialed[name] = dial{refused: refused, at: time.Now()}
	}
	s.mu.Unlock()
	return refused
}

// refuses says whether a TCP connection to addr is refused (nothing
// listens there), within crashDial.
func refuses(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: crashDial}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

package fill

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// DefaultMaxConns is Server.MaxConns's default: the client keeps at most
// one connection per request in flight (8, outputs/stage) and the lab a
// few more, far below it; a local user able to connect to the socket
// could otherwise open thousands, each holding a goroutine, its buffers
// and a descriptor (for up to the read timeout while it waits for a slot,
// IdleTimeout while idle), and take the descriptors a request needs.
const DefaultMaxConns = 64

func (s *Server) maxConns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return DefaultMaxConns
}

// connCap counts the connections the server holds: one is counted as it
// is accepted and let go when the http.Server says it is closed (its
// ConnState hook), so connCap does not wrap the connection
// (PeerListener's must stay a *net.UnixConn; only protoErrListener, outside
// both, wraps it). A connection accepted over
// the cap is answered 503 and closed at once, never read: it costs no
// goroutine, and the client reads the answer before it sees the close.
// With AllowUIDs, a peer not listed is answered 403 as soon as it is accepted,
// uncounted: such peers cannot hold the connections the allowed need
// (peerCheck still answers any request that gets by).
type connCap struct {
	max  int
	held *atomic.Int64 // Server.connsHeld
	// refused, when set, is the answer to a connection refused whatever
	// the count (a peer not allowed), or nil, and the peer's uid (-1:
	// not known).
	refused func(net.Conn) ([]byte, int)
	log     zerolog.Logger

	mu sync.Mutex
	// idle: connections kept alive between requests (the client keeps up
	// to one per request in flight for the next): a connection over the
	// cap takes the place of one of them (evict) rather than being
	// refused, so clients' kept connections never hold the cap for good
	// (a hundred clients on one socket were all refused, for ever).
	idle    map[net.Conn]struct{}
	evicted map[net.Conn]bool // closed here: their StateClosed is not counted again
	counts  map[int]int64     // refused by status since last logged
	lastUID int               // of the last peer refused 403
	lastLog time.Time         // a flood of refusals logs once a minute
	full    []byte            // the 503, made once
}

func (s *Server) newConnCap() *connCap {
	c := &connCap{max: s.maxConns(), held: &s.connsHeld, log: s.Log, counts: map[int]int64{},
		idle: map[net.Conn]struct{}{}, evicted: map[net.Conn]bool{}}
	c.full = closingAnswer(http.StatusServiceUnavailable, fmt.Sprintf("mesh-fill holds %d connections (its --max-conns), each waiting or being read, none idle; this one is refused: send it again", c.max))
	if len(s.AllowUIDs) > 0 {
		c.refused = func(conn net.Conn) ([]byte, int) {
			uid, ok := peerUID(conn)
			if ok && slices.Contains(s.AllowUIDs, uid) {
				return nil, uid
			}
			return closingAnswer(http.StatusForbidden, notAllowed(uid, ok, s.AllowUIDs)), uid
		}
	}
	return c
}

// closingAnswer is a whole HTTP answer of status with msg as its error, after
// which the connection is closed.
func closingAnswer(status int, msg string) []byte {
	body, _ := json.Marshal(errorBody{Error: msg})
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// listener is ln whose Accept hands over only the connections within the cap.
func (c *connCap) listener(ln net.Listener) net.Listener { return capListener{ln, c} }

// state is the http.Server's ConnState hook: a connection closed (or
// taken over) is let go.
func (c *connCap) state(conn net.Conn, st http.ConnState) {
	switch st {
	case http.StateIdle:
		c.mu.Lock()
		c.idle[conn] = struct{}{}
		c.mu.Unlock()
	case http.StateActive:
		c.mu.Lock()
		delete(c.idle, conn)
		c.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		c.mu.Lock()
		delete(c.idle, conn)
		counted := !c.evicted[conn]
		delete(c.evicted, conn)
		c.mu.Unlock()
		if counted {
			c.held.Add(-1)
		}
	}
}

// evict closes a connection kept idle, if there is one, and lets go of
// it: a new connection takes its place. A request sent on it meanwhile
// finds it closed, and the client sends it again on a new one (a fill
// names the whole content of its files: sending it twice does what once
// does).
func (c *connCap) evict() bool {
	c.mu.Lock()
	var victim net.Conn
	for conn := range c.idle {
		victim = conn
		break
	}
	if victim == nil {
		c.mu.Unlock()
		return false
	}
	delete(c.idle, victim)
	c.evicted[victim] = true
	c.mu.Unlock()
	_ = victim.Close()
	c.held.Add(-1)
	return true
}

type capListener struct {
	net.Listener
	c *connCap
}

func (l capListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.c.refused != nil {
			if a, uid := l.c.refused(conn); a != nil {
				l.c.refuse(conn, http.StatusForbidden, a, uid)
				continue
			}
		}
		if l.c.held.Add(1) <= int64(l.c.max) || l.c.evict() {
			return conn, nil
		}
		l.c.held.Add(-1)
		l.c.refuse(conn, http.StatusServiceUnavailable, l.c.full, -1)
	}
}

// refuse answers conn (of a peer of uid) and closes it. The answer fits
// an empty socket buffer, so the write does not wait (the deadline is for
// safety). Refusals are logged with their count, at most once a minute.
func (c *connCap) refuse(conn net.Conn, status int, a []byte, uid int) {
	// Each one for --log-level debug, said before the answer (a test
	// counting them reads the log once its client has the answer).
	if status == http.StatusForbidden {
		c.log.Debug().Int("peer_uid", uid).Msg("fill socket: connection refused")
	} else {
		c.log.Debug().Int("max_conns", c.max).Msg("fill socket: a connection over --max-conns refused")
	}
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(a)
	_ = conn.Close()
	c.mu.Lock()
	c.counts[status]++
	if status == http.StatusForbidden {
		c.lastUID = uid
	}
	lastUID := c.lastUID
	var counts map[int]int64
	if now := time.Now(); now.Sub(c.lastLog) >= time.Minute {
		counts, c.counts, c.lastLog = c.counts, map[int]int64{}, now
	}
	c.mu.Unlock()
	if n := counts[http.StatusServiceUnavailable]; n > 0 {
		c.log.Warn().Int("max_conns", c.max).Int64("refused", n).Msg("connections over --max-conns answered 503 and closed")
	}
	if n := counts[http.StatusForbidden]; n > 0 {
		c.log.Warn().Int64("refused", n).Int("last_peer_uid", lastUID).Msg("fill socket: connections of peers not allowed answered 403 and closed")
	}
}

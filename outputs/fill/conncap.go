package fill

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
// ConnState hook), so the connection itself is not wrapped
// (PeerListener's must stay a *net.UnixConn). A connection accepted over
// the cap is answered 503 and closed at once, never read: it costs no
// goroutine, and the client reads the answer before it sees the close.
type connCap struct {
	max  int
	held *atomic.Int64 // Server.connsHeld
	log  func(refused int64)

	mu        sync.Mutex
	refused   int64     // since the last logged
	lastLog   time.Time // a flood of refusals logs once a minute
	answerFor []byte    // the 503, made once
}

func (s *Server) newConnCap() *connCap {
	c := &connCap{max: s.maxConns(), held: &s.connsHeld}
	c.log = func(n int64) {
		s.Log.Warn().Int("max_conns", c.max).Int64("refused", n).
			Msg("connections over --max-conns answered 503 and closed")
	}
	msg := fmt.Sprintf("mesh-fill holds %d connections (its --max-conns), idle, waiting or being read; this one is refused: send it again", c.max)
	body, _ := json.Marshal(errorBody{Error: msg})
	body = append(body, '\n')
	c.answerFor = fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable), len(body), body)
	return c
}

// listener is ln whose Accept hands over only the connections within the cap.
func (c *connCap) listener(ln net.Listener) net.Listener { return capListener{ln, c} }

// state is the http.Server's ConnState hook: a connection closed (or
// taken over) is let go.
func (c *connCap) state(_ net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		c.held.Add(-1)
	}
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
		if l.c.held.Add(1) <= int64(l.c.max) {
			return conn, nil
		}
		l.c.held.Add(-1)
		l.c.refuse(conn)
	}
}

// refuse answers conn 503 and closes it. The answer fits an empty
// socket buffer, so the write does not wait (the deadline is for safety).
func (c *connCap) refuse(conn net.Conn) {
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write(c.answerFor)
	_ = conn.Close()
	c.mu.Lock()
	c.refused++
	var n int64
	if now := time.Now(); now.Sub(c.lastLog) >= time.Minute {
		n, c.refused, c.lastLog = c.refused, 0, now
	}
	c.mu.Unlock()
	if n > 0 {
		c.log(n)
	}
}

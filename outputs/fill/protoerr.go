package fill

import (
	"bytes"
	"net"
	"strconv"
)

// protoErrListener hands over each connection as a protoErrConn. It is the
// outermost listener (over connCap's and PeerListener's), so the
// connection the http.Server sees, keeps in ConnState and closes is this
// one; ConnContext looks through it for the peerConn.
type protoErrListener struct{ net.Listener }

func (l protoErrListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &protoErrConn{c}, nil
}

// protoErrConn turns the answers net/http writes itself, straight to the
// connection, to a request it cannot read (400 of a request line out of
// shape or one without a Host header, 431 of a head over the limit, 501
// of a transfer encoding it does not know) from text/plain into SPEC
// §4.3's {"error"}, so a client reads every 4xx and 5xx the same way.
// Such an answer is one write of "HTTP/1.1 <code> …" followed by
// httpErrorHeaders; the handlers' answers are JSON, never text/plain, and
// pass as they are.
type protoErrConn struct{ net.Conn }

// httpErrorHeaders are the headers of net/http's own error answers
// (net/http's errorHeaders).
const httpErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *protoErrConn) Write(b []byte) (int, error) {
	if !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(b)
	}
	i := bytes.Index(b, []byte(httpErrorHeaders))
	if i < 0 || i < len("HTTP/1.1 ")+3 {
		return c.Conn.Write(b)
	}
	code, err := strconv.Atoi(string(b[len("HTTP/1.1 ") : len("HTTP/1.1 ")+3]))
	if err != nil || code < 400 || code > 599 {
		return c.Conn.Write(b)
	}
	said := string(b[i+len(httpErrorHeaders):])
	if _, err := c.Conn.Write(closingAnswer(code, "mesh-fill could not read the request: "+said)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// CloseWrite lets net/http half-close the connection after its answer (a
// 431: it then waits for the client to close), as it does a
// *net.UnixConn.
func (c *protoErrConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

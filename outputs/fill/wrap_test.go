package fill

import (
	"bytes"
	"encoding/base64"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tapConn keeps a copy of what is sent through it.
type tapConn struct {
	net.Conn
	mu   *sync.Mutex
	sent *bytes.Buffer
}

func (c tapConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.sent.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// What Client.Wrap returns is the connection the requests go over, one
// for requests one after another.
func TestWrapIsGivenEachNewConnection(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir()})
	var wrapped atomic.Int32
	var mu sync.Mutex
	var sent bytes.Buffer
	c.Timeout = 10 * time.Second
	c.Wrap = func(nc net.Conn) net.Conn {
		wrapped.Add(1)
		return tapConn{Conn: nc, mu: &mu, sent: &sent}
	}
	for _, v := range []string{"first-content", "second-content"} {
		fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/etc/a", Form: FormOwned, Content: []byte(v)}}})
	}
	if n := wrapped.Load(); n != 1 {
		t.Errorf("Wrap called %d times for two requests one after another, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{"first-content", "second-content"} {
		if !bytes.Contains(sent.Bytes(), []byte(base64.StdEncoding.EncodeToString([]byte(want)))) {
			t.Errorf("the request holding %q did not go through the wrapped connection", want)
		}
	}
}

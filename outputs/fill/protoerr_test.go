package fill

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestARequestNetHTTPCannotReadIsAnsweredAsJSON: SPEC §4.3's 4xx answers
// are {"error"}, and so are those of a request the HTTP server cannot
// read: one without a Host header (a hand-written client of the unix
// socket), a head over the limit (431), a transfer encoding it does not
// know (501), a request line out of shape. Before, net/http wrote them
// itself as text/plain ("400 Bad Request"), which a client decoding the
// answer's error could not read. The answers of requests it can read stay
// as they were.
func TestARequestNetHTTPCannotReadIsAnsweredAsJSON(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	body := `{"module":"m","files":[{"path":"/x","form":"owned","content":"aGkK"}]}`
	for _, tc := range []struct {
		name, head string
		status     int
		says       string
	}{
		{"no Host", fmt.Sprintf("POST %s HTTP/1.1\r\nContent-Length: %d\r\n\r\n", FillPath, len(body)), 400, "missing required Host header"},
		{"head too large", fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n", FillPath, strings.Repeat("p", 200<<10), len(body)), 431, "Request Header Fields Too Large"},
		{"transfer encoding", fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nTransfer-Encoding: gzip\r\n\r\n", FillPath), 501, "transfer encoding"},
		{"request line", "GARBAGE\r\n\r\n", 400, "Bad Request"},
	} {
		conn, err := net.Dial("unix", c.Socket)
		if err != nil {
			t.Fatal(err)
		}
		go func() { conn.Write([]byte(tc.head)); conn.Write([]byte(body)) }()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer: %v", tc.name, err)
		}
		msg, _ := io.ReadAll(resp.Body)
		conn.Close()
		var e map[string]any
		if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(msg, &e) != nil ||
			len(e) != 1 || !strings.Contains(fmt.Sprint(e["error"]), tc.says) {
			t.Errorf("%s: answer %d %s %q; want %d and {\"error\"} saying %q", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), msg, tc.status, tc.says)
		}
	}
	mustAbsent(t, root+"/x")
	// a request it can read is answered as before, on a connection kept
	fillOK(t, c, Request{Module: "m", Files: []File{{Path: "/y", Form: FormOwned, Content: []byte("y\n")}}})
	mustRead(t, root+"/y", "y\n")
}

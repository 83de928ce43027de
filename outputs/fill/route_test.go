package fill

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawExchange sends raw over a new connection to c's socket and reads the
// answer's status, its Allow header and its body.
func rawExchange(t *testing.T, c *Client, raw string) (int, string, string) {
	t.Helper()
	conn, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Allow"), string(body)
}

// TestRoutesMethodsAndChunkedBodies: the fill socket serves POST /v1/fill
// and DELETE /v1/modules/<module>. Another method on either is a 405 with
// the Allow header and the method named; another route a 404 naming it and
// the two it serves; nothing is written for either. A body sent chunked
// (no Content-Length) is filled as any other.
func TestRoutesMethodsAndChunkedBodies(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root})
	body := `{"module":"m","files":[{"path":"/x","form":"owned","content":"aGkK"}]}`
	withBody := func(method, route string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: fill\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", method, route, len(body), body)
	}
	for _, tc := range []struct {
		raw    string
		status int
		allow  string
		says   []string
	}{
		{withBody("GET", FillPath), http.StatusMethodNotAllowed, "POST", []string{"method GET not allowed; use POST"}},
		{withBody("PUT", FillPath), http.StatusMethodNotAllowed, "POST", []string{"method PUT"}},
		{withBody("POST", ModulesPath+"m"), http.StatusMethodNotAllowed, "DELETE", []string{"method POST not allowed; use DELETE"}},
		{withBody("POST", "/v1/fill/"), http.StatusNotFound, "", []string{"no such route /v1/fill/", "POST /v1/fill", "DELETE /v1/modules/"}},
		{withBody("POST", "/v2/fill"), http.StatusNotFound, "", []string{"no such route /v2/fill"}},
	} {
		status, allow, msg := rawExchange(t, c, tc.raw)
		if status != tc.status || allow != tc.allow {
			t.Errorf("%q: answered %d (Allow %q) %s; want %d (Allow %q)", strings.SplitN(tc.raw, "\r\n", 2)[0], status, allow, msg, tc.status, tc.allow)
		}
		for _, s := range tc.says {
			if !strings.Contains(msg, s) {
				t.Errorf("%q: %s does not say %s", strings.SplitN(tc.raw, "\r\n", 2)[0], msg, s)
			}
		}
	}
	mustAbsent(t, filepath.Join(root, "x"))

	chunked := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fill\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n",
		FillPath, 10, body[:10], len(body)-10, body[10:])
	if status, _, msg := rawExchange(t, c, chunked); status != http.StatusOK || !strings.Contains(msg, `"action":"written"`) {
		t.Errorf("a chunked body: %d %s", status, msg)
	}
	mustRead(t, filepath.Join(root, "x"), "hi\n")
}

package fill

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// rawFill sends a fill of body over conn, its first n bytes only when n
// is less than its length.
func rawFill(conn net.Conn, body string, n int) {
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: fill\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		FillPath, len(body), body[:min(n, len(body))])
}

// closedWithin says whether the server closes conn within d (reading
// through whatever it answers first).
func closedWithin(t *testing.T, conn net.Conn, d time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	if b, err := io.ReadAll(conn); err != nil {
		t.Fatalf("mesh-fill did not close the connection within %s: %v (read %q)", d, err, b)
	}
}

const oneFile = `{"module":"m","files":[{"path":"/a","form":"owned","content":"aGkK"}]}`

// A peer that stops halfway through a body held its connection (a goroutine
// and a descriptor of mesh-fill's) for ever; it is closed once ReadTimeout
// has passed, and nothing of it is written.
func TestABodyLeftHalfSentIsGivenUpOn(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, ReadTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rawFill(conn, oneFile, 20)
	closedWithin(t, conn, 3*time.Second)
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Fatalf("written: %v", entries)
	}
}

// A kept connection left idle past IdleTimeout is closed by mesh-fill.
func TestAnIdleConnectionIsClosed(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir(), IdleTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("unix", c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rawFill(conn, oneFile, len(oneFile))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("answer %d, close %v: want 200, kept", resp.StatusCode, resp.Close)
	}
	closedWithin(t, conn, 3*time.Second)
}

// The client's kept connection closed that way under it: its next request
// goes over a new one, and succeeds.
func TestAKeptConnectionClosedWhileIdleIsDialledAgain(t *testing.T) {
	c := startServer(t, &Server{Root: t.TempDir(), IdleTimeout: 200 * time.Millisecond})
	req := Request{Module: "m", Files: []File{{Path: "/a", Form: "owned", Content: []byte("one\n")}}}
	fillOK(t, c, req)
	time.Sleep(600 * time.Millisecond)
	req.Files[0].Content = []byte("two\n")
	if resp := fillOK(t, c, req); resp.Files[0].Action != "written" {
		t.Fatalf("after the idle close: %+v", resp)
	}
}

// A request whose program runs past the read timeout (a restart as slow
// as ProgramTimeout) leaves its kept connection good: the next requests
// on it are applied and answered. Before, the read deadline, left running
// while the request ran, ended net/http's watch for the client going as
// if it had gone: every later request on the connection was not applied
// and answered an empty 200 (an outside audit), through the real client
// too, whose refills kept using the connection.
func TestARequestRunningPastTheReadTimeoutLeavesItsConnectionGood(t *testing.T) {
	root := t.TempDir()
	c := startServer(t, &Server{Root: root, ReadTimeout: 300 * time.Millisecond,
		Command: []string{"sh", "-c", `case "$1" in slow.service) sleep 0.8;; esac`}})
	slow := Request{Module: "slow", Whole: true, Files: []File{{Path: "/slow", Form: FormOwned, Content: []byte("s\n"),
		OnChange: OnChange{Action: "restart", Unit: "slow.service"}}}}
	if _, err := c.Fill(t.Context(), slow); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		path := fmt.Sprintf("/other-%d", i)
		resp, err := c.Fill(t.Context(), Request{Module: "other", Files: []File{{Path: path, Form: FormOwned, Content: []byte("o\n")}}})
		if err != nil || len(resp.Files) != 1 {
			t.Fatalf("request %d after the slow one: %+v, %v", i, resp, err)
		}
		mustRead(t, root+path, "o\n")
	}
}

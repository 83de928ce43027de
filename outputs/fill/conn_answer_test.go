package fill

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawEngine is a node-engine of the test's making on a unix socket: for
// each request on a connection it reads the request whole, then writes the
// bytes answer gives for it (the n-th request on the connection, from 0),
// exactly as they are, however out of protocol. sent gets n once the
// n-th answer is written whole.
func rawEngine(t *testing.T, answer func(n int) []byte) (c *Client, sent <-chan int) {
	t.Helper()
	sock := filepath.Join(socketDir(t), "raw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan int, 8)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		br := bufio.NewReader(nc)
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			out := answer(n)
			for len(out) > 0 { // in pieces: one too large for the client stops it
				k := min(len(out), 64<<10)
				if _, err := nc.Write(out[:k]); err != nil {
					return
				}
				out = out[k:]
			}
			ch <- n
		}
	}()
	return &Client{Socket: sock, Timeout: 30 * time.Second}, ch
}

func okAnswer(path string) string {
	body := fmt.Sprintf(`{"files":[{"path":%q,"action":"written","digest":"sha256:%064x"}]}`, path, 0)
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// An informational answer (100 Continue, 102 Processing) before the
// request's own is skipped, as Go's Transport does: taken as the answer,
// it left the real one buffered, and the kept connection gave each later
// request the answer of the one before (an outside audit).
func TestInformationalAnswersAreSkipped(t *testing.T) {
	c, _ := rawEngine(t, func(n int) []byte {
		if n == 0 {
			return []byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n" + okAnswer("/etc/first"))
		}
		return []byte(okAnswer("/etc/second"))
	})
	for _, want := range []string{"/etc/first", "/etc/second"} {
		resp, err := c.Fill(t.Context(), Request{Module: "m", Files: []File{{Path: want, Form: FormOwned, Content: []byte("x")}}})
		if err != nil {
			t.Fatalf("fill of %s: %v", want, err)
		}
		if len(resp.Files) != 1 || resp.Files[0].Path != want {
			t.Fatalf("fill of %s got the answer %+v", want, resp.Files)
		}
	}
}

// A 101 is no answer to a fill: the request fails and the connection is
// not kept.
func TestA101IsNoAnswer(t *testing.T) {
	c, _ := rawEngine(t, func(int) []byte {
		return []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n" + okAnswer("/etc/a"))
	})
	_, err := c.Fill(t.Context(), Request{Module: "m"})
	if err == nil || !strings.Contains(err.Error(), "101") {
		t.Fatalf("a 101 answer: %v", err)
	}
	if len(c.idle) != 0 {
		t.Errorf("%d connections kept after a 101", len(c.idle))
	}
}

// Answer headers without end (300 MiB of one header took the client to
// 1 GB of RSS in the audit) fail the request at 1 MiB, long before the
// node-engine is done sending, and the connection is not kept.
func TestAnswerHeadersOverTheBoundFail(t *testing.T) {
	pad := append([]byte("HTTP/1.1 200 OK\r\nX-Pad: "), bytes.Repeat([]byte("a"), 48<<20)...)
	c, sent := rawEngine(t, func(int) []byte { return pad })
	c.Timeout = 10 * time.Second
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.Fill(t.Context(), Request{Module: "m"})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "the node-engine's answer headers are over 1 MiB") {
		t.Fatalf("headers without end: %v", err)
	}
	if len(sent) != 0 {
		t.Error("the request failed only once the node-engine had sent it all")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("the client allocated %d MiB for the headers", grew>>20)
	}
	if len(c.idle) != 0 {
		t.Errorf("%d connections kept", len(c.idle))
	}
}

// A 200 whose body is over maxAnswer says so, not "unexpected end of JSON
// input".
func TestAnAnswerOverTheLimitSaysSo(t *testing.T) {
	body := append([]byte(`{"files":[{"path":"`), bytes.Repeat([]byte("a"), maxAnswer)...)
	body = append(body, `"}]}`...)
	ans := append([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))), body...)
	c, _ := rawEngine(t, func(int) []byte { return ans })
	_, err := c.Fill(t.Context(), Request{Module: "m"})
	if err == nil || !strings.Contains(err.Error(), "over the 16 MiB limit") {
		t.Fatalf("an answer over the limit: %v", err)
	}
	if len(c.idle) != 0 {
		t.Errorf("%d connections kept", len(c.idle))
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestWhatTheHTTPServerSaysIsInTheStructuredLog: what net/http says of
// the fill socket (here the accept errors of a mesh-fill out of file
// descriptors: its open-file limit 64, 100 connections held) is a
// warning of mesh-fill's own JSON log, like every other line it writes.
// Before, it went to the standard logger: plain text lines on stderr
// ("2026/12/04 05:05:32 http: Accept error: …") that a log shipper
// reading JSON dropped or choked on.
func TestWhatTheHTTPServerSaysIsInTheStructuredLog(t *testing.T) {
	t.Setenv("MESH_FILL_NOFILE", "64")
	p := start(t, "--root", t.TempDir())
	if !p.running() {
		t.Fatalf("exited; stderr:\n%s", p.said())
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.Dial("unix", p.sock)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	bustest.Eventually(t, 30*time.Second, func() error {
		if !strings.Contains(p.said(), "Accept error") {
			return fmt.Errorf("no accept error said yet; stderr:\n%.3000s", p.said())
		}
		return nil
	})
	accept := false
	for _, line := range strings.Split(strings.TrimSpace(p.said()), "\n") {
		var ev struct{ Level, Service, Message string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("a line of stderr is not a JSON event (%v): %q", err, line)
			continue
		}
		if strings.Contains(ev.Message, "Accept error") {
			accept = true
			if ev.Level != "warn" || ev.Service != "mesh-fill" {
				t.Errorf("the accept error is level %q of service %q, want a warning of mesh-fill: %s", ev.Level, ev.Service, line)
			}
		}
	}
	if !accept {
		t.Errorf("no JSON event says the accept error; stderr:\n%.3000s", p.said())
	}
}

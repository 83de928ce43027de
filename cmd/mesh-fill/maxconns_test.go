package main

import (
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestMaxConnsCapsTheConnectionsHeld: `--max-conns 1` with one connection
// held (connected, nothing sent yet): the next is answered 503 naming the
// flag, and nothing of it is written.
func TestMaxConnsCapsTheConnectionsHeld(t *testing.T) {
	root := t.TempDir()
	p := start(t, "--root", root, "--max-conns", "1")
	if !p.running() {
		t.Fatalf("mesh-fill exited: %s", p.said())
	}
	held, err := net.Dial("unix", p.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	c := &fill.Client{Socket: p.sock}
	_, err = c.Fill(t.Context(), fill.Request{Module: "m", Files: []fill.File{{Path: "/a", Form: fill.FormOwned, Content: []byte("x")}}})
	var se *fill.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable || !strings.Contains(se.Msg, "1 connections (its --max-conns)") {
		t.Fatalf("a second connection: %v; want a 503 naming --max-conns", err)
	}
	if _, err := os.Lstat(root + "/a"); !os.IsNotExist(err) {
		t.Errorf("/a written: %v", err)
	}
}

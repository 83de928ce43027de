package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// TestControlGivenTheFillSocketSaysSo: --control naming the node's fill
// socket (the other socket beside it: .lab/<node>/fill.sock) is answered
// by mesh-fill, whose refusal said only that it has no such route; the
// operator is told it is the fill socket and which socket to name.
func TestControlGivenTheFillSocketSaysSo(t *testing.T) {
	dir, err := os.MkdirTemp("", "wrongsock") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "fill.sock")
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	os.MkdirAll(filepath.Join(dir, "root"), 0o755)
	go (&fill.Server{Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state"), Command: []string{"true"}}).Serve(ctx, sock)
	bustest.Eventually(t, 10*time.Second, func() error {
		_, _, err := control.NewClient(sock, 0).Get(ctx, "/")
		return err
	})
	for _, args := range [][]string{
		{"status", "--control", sock},
		{"graph", "explain", "--control", sock, "grafana"},
		{"graph", "dot", "--control", sock},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		want := "this is a fill socket (mesh-fill), which serves POST /v1/fill and DELETE /v1/modules/<module>; " +
			"status, graph explain and graph dot ask the provisioner client's control socket: name it with --control\n"
		if code != 1 || out.Len() != 0 || !strings.HasSuffix(errb.String(), want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1 and an error ending %q", args, code, out.String(), errb.String(), want)
		}
	}
}

// TestRunGivenTheFillSocketAsControlSaysSo: `run --control` naming the
// node-engine's fill socket (the two flags swapped in a unit, say) said
// "another client answers on it", and the operator looked for a second
// client; it says that mesh-fill's fill socket is there, and the run still
// exits 2 at once, before it takes the bus.
func TestRunGivenTheFillSocketAsControlSaysSo(t *testing.T) {
	dir, err := os.MkdirTemp("", "wrongrun") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "fill.sock")
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	os.MkdirAll(filepath.Join(dir, "root"), 0o755)
	go (&fill.Server{Root: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state"), Command: []string{"true"}}).Serve(ctx, sock)
	bustest.Eventually(t, 10*time.Second, func() error {
		_, _, err := control.NewClient(sock, 0).Get(ctx, "/")
		return err
	})
	code, _, stderr := runCLIWithin(t, "run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--state-dir", t.TempDir(),
		"--control", sock, "--fill-socket", sock)
	want := "run: control socket " + sock + ": mesh-fill's fill socket answers on it, not a client's control socket"
	if code != 2 || !strings.HasPrefix(stderr, want) || strings.Contains(stderr, "another client") {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

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

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// world is a real bus (embedded nats-server with JetStream), the
// provisioner's buckets and registry, a fill server writing under a temp
// root, and node ace's daemon with its control socket.
type world struct {
	t     *testing.T
	js    jetstream.JetStream
	dir   string
	sock  string // the control socket
	state string // ace's daemon's state dir (newWorld)
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w, url, fillSock := newBareWorld(t)
	w.state = t.TempDir()
	d, err := daemon.New(daemon.Config{Node: "ace", Bus: bus.Options{URL: url}, FillSocket: fillSock,
		StateDir: w.state, Control: w.sock, Refill: time.Hour, Recheck: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	dctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(dctx) }()
	t.Cleanup(func() { stop(); <-done })
	return w
}

// newBareWorld is a world without ace's daemon, for one run as its own
// process: the bus's URL and the fill socket.
func newBareWorld(t *testing.T) (w *world, url, fillSock string) {
	t.Helper()
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ctx := context.Background()
	if err := srv.EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	reg, _ := js.KeyValue(ctx, spec.RegistryBucket)
	if _, _, err := srv.PublishRegistry(ctx, reg, srv.Registry()); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{spec.AssignmentsBucket, spec.ConfigBucket} {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b}); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "cli") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w = &world{t: t, js: js, dir: dir, sock: filepath.Join(dir, "control.sock")}

	fillSock = filepath.Join(dir, "fill.sock")
	fctx, stopFill := context.WithCancel(context.Background())
	t.Cleanup(stopFill)
	os.MkdirAll(filepath.Join(dir, "root"), 0o755)
	go (&fill.Server{Root: filepath.Join(dir, "root"), Command: []string{"true"}}).Serve(fctx, fillSock)
	return w, s.ClientURL(), fillSock
}

func (w *world) put(bucket, key, value string) {
	w.t.Helper()
	kv, err := w.js.KeyValue(context.Background(), bucket)
	if err == nil {
		_, err = kv.Put(context.Background(), key, []byte(value))
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

// assign puts ace's assignment of module: one file from one template.
func (w *world) assign(module, path, template string) {
	w.t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "t", Mode: 0o644, Size: int64(len(template)), Typeflag: tar.TypeReg})
	tw.Write([]byte(template))
	tw.Close()
	arch := filepath.Join(w.dir, module+".tar")
	if err := os.WriteFile(arch, buf.Bytes(), 0o644); err != nil {
		w.t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	p := nodes.Plan{Files: []nodes.FileSpec{{Path: path, Template: "t"}}}
	p.Templates.Ref, p.Templates.Digest = "file://"+arch, "sha256:"+hex.EncodeToString(sum[:])
	b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: module, Provisioning: p})
	w.put(spec.AssignmentsBucket, spec.EncodeKey("ace", module), string(b))
}

// runCLI runs the command as a user would and returns what it printed.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// runCLIWithin is runCLI for a run that must end by itself: one still
// running after 10 s fails the test (and is left running).
func runCLIWithin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.code, r.stdout, r.stderr = runCLI(args...)
		done <- r
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(10 * time.Second):
		t.Fatalf("%v still runs after 10 s", args)
		return 0, "", ""
	}
}

// unusableDir is a path under a regular file: no directory can be made there.
func unusableDir(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(file, "state")
}

// until runs the command until its output holds want.
func (w *world) until(want string, args ...string) string {
	w.t.Helper()
	var out string
	bustest.Eventually(w.t, 10*time.Second, func() error {
		code, o, errOut := runCLI(args...)
		if out = o; code == 0 && strings.Contains(out, want) {
			return nil
		}
		return fmt.Errorf("%v: never printed %q; last exit %d:\n%s%s", args, want, code, out, errOut)
	})
	return out
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, x := range subs {
		if !strings.Contains(s, x) {
			t.Fatalf("%s lacks %q:\n%s", what, x, s)
		}
	}
}

// inChild starts this test binary again as its own process, running only
// the test t, with env added (which tells the test it is the child): for a
// test whose subject is the whole process (the collector's pacing, the
// heap's pages).
func inChild(t *testing.T, env ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, os.Args[0], []string{"-test.run=^" + t.Name() + "$"}, env)
}

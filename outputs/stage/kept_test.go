package stage

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// A change's fill goes over the connection the last one was answered on
// (issue 20): mesh-fill restarted underneath it, the next change's file
// still lands (the request is sent again over a new connection).
func TestAFillOverAKeptConnectionLandsAfterMeshFillRestarted(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sock := shortSock(t, "restart")
	serve := func() (stop func()) {
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- (&fill.Server{Root: r.root, Log: zerolog.Nop()}).Serve(sctx, sock) }()
		bustest.Eventually(t, 5*time.Second, func() error {
			c, err := net.Dial("unix", sock)
			if err == nil {
				c.Close()
			}
			return err
		})
		return func() { cancel(); <-done }
	}
	stop := serve()
	r.s.cfg.Fill = &fill.Client{Socket: sock, Timeout: 5 * time.Second}
	at := func(content string) views {
		return views{"web": {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(owned("/etc/web.conf", content, false))}}}
	}
	conf := filepath.Join(r.root, "etc/web.conf")
	r.send(ctx, at("one"), []string{"web"}, false) // over a new connection, kept once answered
	mustHold(t, conf, "one")
	r.s.Send(ctx, at("two"), []string{"web"}, false)
	r.s.Land(r.next()) // over the connection the first was answered on
	mustHold(t, conf, "two")

	stop()
	stop = serve()
	defer stop()
	r.send(ctx, at("three"), []string{"web"}, false)
	mustHold(t, conf, "three")
	r.send(ctx, at("four"), []string{"web"}, false)
	mustHold(t, conf, "four")
}

func mustHold(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Fatalf("%s holds %q (%v), want %q", p, b, err, want)
	}
}

// A node-engine that takes a module's fill over a kept connection and
// never answers holds up neither the loop nor another module's fill,
// and the stage still stops at once.
func TestAFillNeverAnsweredOverAKeptConnectionHoldsUpNeitherTheLoopNorAnotherModule(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	sock := shortSock(t, "hang")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var hang atomic.Bool
	reached := make(chan struct{}, 1)
	meshFill := (&fill.Server{Root: r.root, Log: zerolog.Nop()}).Handler()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, _ := io.ReadAll(hr.Body)
		if hang.Load() && bytes.Contains(body, []byte(`"module":"slow"`)) {
			reached <- struct{}{}
			<-hr.Context().Done() // never answered
			return
		}
		hr.Body = io.NopCloser(bytes.NewReader(body))
		meshFill.ServeHTTP(w, hr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r.s.cfg.Fill = &fill.Client{Socket: sock, Timeout: time.Minute}

	at := func(slow, fast string) views {
		file := func(module, content string) []nodes.FileView {
			v := owned("/etc/"+module+".conf", content, false)
			return []nodes.FileView{ready(v)}
		}
		return views{"slow": {Name: "slow", State: graph.Ready, Files: file("slow", slow)},
			"fast": {Name: "fast", State: graph.Ready, Files: file("fast", fast)}}
	}
	r.send(ctx, at("1", "1"), []string{"slow", "fast"}, false) // each over a connection then kept
	hang.Store(true)
	began := time.Now()
	r.s.Send(ctx, at("2", "1"), []string{"slow"}, false)
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("slow's fill did not reach the node-engine")
	}
	r.s.Send(ctx, at("2", "2"), []string{"fast"}, false)
	if took := time.Since(began); took > 2*time.Second { // a liveness bound: the fill waits a minute
		t.Fatalf("the loop was held %s by a fill not answered", took)
	}
	d := r.next()
	if d.Module != "fast" {
		t.Fatalf("%s came back, want fast's", d.Module)
	}
	r.s.Land(d)
	r.s.Send(ctx, at("2", "2"), nil, false)
	mustHold(t, filepath.Join(r.root, "etc/fast.conf"), "2")
	if n := r.s.InFlight(); n != 1 {
		t.Fatalf("%d in flight, want slow's", n)
	}
	if !within(2*time.Second, r.s.Stop) {
		t.Fatal("Stop did not return within 2 s while a fill was not answered")
	}
}

// shortSock is a socket path in a directory of its own, removed with
// the test: short, as a socket path is at most 108 bytes.
func shortSock(t *testing.T, pattern string) string {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "fill.sock")
}

// within says whether f returned within limit.
func within(limit time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		return false
	}
}

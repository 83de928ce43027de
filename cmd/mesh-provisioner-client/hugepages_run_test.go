//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/cmd/internal/proctest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// runChildEnv holds the arguments TestTheClientsHeapIsInHugePagesOnceSettledUnlessTurnedOff's
// child runs the client's `run` with, as JSON: the collapse is of the
// whole process's memory, so the client runs in a process of its own.
const runChildEnv = "CLIENT_RUN_CHILD"

// The client as an operator starts it: once its cold start is answered
// and settled, its heap is in huge pages and its log says so; with
// --huge-pages=false it has none.
// (The child holds 16 MiB of written memory besides the client's, so
// there are dense stretches to collapse however small this node is.)
func TestTheClientsHeapIsInHugePagesOnceSettledUnlessTurnedOff(t *testing.T) {
	if args := os.Getenv(runChildEnv); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			t.Fatal(err)
		}
		ballast = make([]byte, 16<<20)
		for i := range ballast {
			ballast[i] = byte(i)
		}
		os.Exit(run(append([]string{"run"}, a...), os.Stdout, os.Stderr))
	}
	if b, err := os.ReadFile(thpSetting); err != nil || strings.Contains(string(b), "[never]") {
		t.Skipf("this machine's transparent huge pages: %q (%v)", b, err)
	}
	start := func(extra ...string) (*world, *proctest.Proc) {
		w, url, fillSock := newBareWorld(t)
		w.put(spec.ConfigBucket, "ace.m.k", "v")
		w.assign("m", "/etc/m.conf", "k=${config:k}\n")
		args, _ := json.Marshal(append([]string{"--node", "ace", "--nats", url, "--fill-socket", fillSock,
			"--state-dir", t.TempDir(), "--control", "", "--refill", "1h"}, extra...))
		p := inChild(t, runChildEnv+"="+string(args), "GOMAXPROCS=", "GOGC=", "GOMEMLIMIT=")
		return w, p
	}
	huge := func(p *proctest.Proc) int64 { return proctest.Rollup(t, p.Pid, "AnonHugePages") }

	w, p := start()
	w.waitApplied()
	waitSettled(t, p)
	bustest.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p.Output(), "the heap is in huge pages") {
			return errors.New("the log never said the heap is in huge pages")
		}
		if huge(p) == 0 {
			return errors.New("the log says the heap is in huge pages, and none are")
		}
		return nil
	})

	w, p = start("--huge-pages=false")
	w.waitApplied()
	waitSettled(t, p)
	time.Sleep(time.Second) // what would follow the settling collection: the collapse, ~10 ms here
	if n := huge(p); n != 0 || strings.Contains(p.Output(), "the heap is in huge pages") {
		t.Fatalf("--huge-pages=false: %d KiB in huge pages once settled:\n%s", n>>10, p.Output())
	}
}

// waitSettled waits for the client's settling collection (settle.go; gctrace
// marks it forced).
func waitSettled(t *testing.T, p *proctest.Proc) {
	t.Helper()
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, g := range p.GCs() {
			if g.Forced {
				return nil
			}
		}
		return errors.New("no settling collection within 10 s of the module applied")
	})
}

// ballast is the child's dense memory.
var ballast []byte

// waitApplied waits until ace's module m is reported applied.
func (w *world) waitApplied() {
	w.t.Helper()
	bustest.Eventually(w.t, 20*time.Second, func() error {
		kv, err := w.js.KeyValue(context.Background(), spec.AppliedBucket)
		if err != nil {
			return err
		}
		e, err := kv.Get(context.Background(), spec.EncodeKey("ace", "m"))
		if err != nil {
			return err
		}
		var r struct{ State string }
		if err := json.Unmarshal(e.Value(), &r); err != nil || r.State != "applied" {
			return fmt.Errorf("ace.m reported %s (%v)", e.Value(), err)
		}
		return nil
	})
}

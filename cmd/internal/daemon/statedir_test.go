package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/outputs/dirlock"
)

// runFor runs a daemon of cfg until it returns or d has passed, and says
// what it returned (nil as well when it was still running).
func runFor(t *testing.T, cfg Config, d time.Duration) error {
	t.Helper()
	daemon, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return daemon.Run(ctx)
}

// Two clients on one state directory (one --node started twice, or two
// nodes given one --state-dir) would fight over the node's reports: the
// second stops at once, before it connects, naming the directory and who
// holds it. Once the first stops, a client starts on it again: the lock
// file it left blocks nothing.
func TestASecondClientOnAStateDirInUseStopsAtOnceNamingIt(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	onState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", onState)
	m.waitState("ace", "web", "applied")

	for _, node := range []string{"ace", "bee"} {
		began := time.Now()
		err := runFor(t, Config{Node: node, Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock, StateDir: state,
			Log: zerolog.New(m.logs)}, 10*time.Second)
		want := fmt.Sprintf("state dir %s is in use by another mesh-provisioner-client (pid %d, node ace)", state, os.Getpid())
		if se := (*StartError)(nil); !errors.As(err, &se) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("a second client (node %s) on the state dir: Run returned %v; want %q", node, err, want)
		}
		if took := time.Since(began); took > 2*time.Second {
			t.Fatalf("the second client took %v to stop", took)
		}
	}
	m.settle()
	if r, _ := m.report("ace", "web"); r["state"] != "applied" {
		t.Fatalf("the first client's report is %v after the second was refused", r)
	}

	stop()
	if _, err := os.Stat(filepath.Join(state, dirlock.Name)); err != nil {
		t.Fatalf("the lock file: %v", err) // left behind, as after a kill -9
	}
	d, _ := m.startClient("ace", onState)
	bustest.Eventually(t, 10*time.Second, func() error {
		if !d.ready.Load() {
			return errors.New("the client started again on the state dir is not ready")
		}
		return nil
	})
}

// A state directory that cannot be used (here, a path under a regular
// file) ends Run at start, naming it and why, rather than leaving every
// module waiting for a cache it can never write.
func TestAStateDirThatCannotBeUsedEndsRunAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(file, "state")
	err := runFor(t, Config{Node: "ace", Bus: bus.Options{URL: "nats://127.0.0.1:1"}, StateDir: state, Log: zerolog.Nop()},
		5*time.Second)
	if se := (*StartError)(nil); !errors.As(err, &se) ||
		!strings.Contains(err.Error(), "state dir "+state+" cannot be used") || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Run returned %v; want the state dir named, and why", err)
	}
}

// The state directory is usable but its templates cache is not (here,
// templates is a file): an archive fetched and checked is used from memory,
// and the log says it was not kept.
func TestAnArchiveTheCacheCannotKeepIsUsedFromMemory(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "templates"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m.client("ace", func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	if logs := m.logs.String(); !strings.Contains(logs, "templates archive not kept in the state dir; used from memory") ||
		!strings.Contains(logs, "not a directory") {
		t.Fatalf("the log does not say the archive was not kept, and why:\n%s", logs)
	}
}

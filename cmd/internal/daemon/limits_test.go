package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A placeholder name of 5,000 bytes would make a need key longer than NATS
// takes, and nats.go would close the connection for good (issue 19.1): it
// fails its module alone, naming the limit; the node stays on the bus and
// another module of it keeps filling.
func TestALongPlaceholderNameFailsItsModuleAlone(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	long := strings.Repeat("n", 5000)
	m.assign("ace", "long", plan1("/etc/long/f"), map[string]string{"t": "x = ${config:" + long + "}\n"})
	d := m.client("ace")
	m.waitState("ace", "web", "applied")
	r := m.waitState("ace", "long", "failed")
	why := fmt.Sprint(r["reason"])
	if !contains(why, "is 5000 bytes encoded, over the limit of 255 (MaxNameBytes)") || contains(why, long) {
		t.Errorf("reason %.300q does not name the limit, or quotes the whole name", why)
	}
	if keys := m.needKeys("ace.long."); len(keys) > 0 {
		t.Errorf("needs of the failed module: %d keys", len(keys))
	}
	if _, err := os.Stat(filepath.Join(m.root, "etc", "long")); err == nil {
		t.Error("a file of the failed module was written")
	}
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	if !d.connected.Load() {
		t.Error("the daemon is off the bus")
	}
}

// A connection closed for good (nothing reconnects it) ends Run with an
// error, so the process exits non-zero and its supervisor starts it again,
// rather than sitting cut off with /healthz at 503 for ever.
func TestRunEndsWithAnErrorWhenTheBusConnectionClosesForGood(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	d, err := New(Config{Node: "ace", Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock, StateDir: t.TempDir(),
		Refill: time.Hour, Recheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	m.waitState("ace", "web", "applied")
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !d.ready.Load() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	d.nc.Close() // d.nc was set before ready was stored
	select {
	case err := <-done:
		if err == nil || !strings.HasPrefix(err.Error(), "bus connection closed: ") {
			t.Fatalf("Run returned %v, want bus connection closed: <reason>", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the connection closed for good")
	}

	// Stopping closes the connection too: that is no error.
	d2, err := New(Config{Node: "ace", Bus: bus.Options{URL: m.s.ClientURL()}, FillSocket: m.sock, StateDir: t.TempDir(),
		Refill: time.Hour, Recheck: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { done <- d2.Run(ctx2) }()
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if !d2.ready.Load() {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	cancel2()
	if err := <-done; err != nil {
		t.Fatalf("Run stopped by its context returned %v", err)
	}
}

// An item over 512 KiB (SPEC §4.1: a KV value must fit the bucket) fails
// its module with a reason naming the collection and the limit; nothing of
// it is recorded, and the collector and other modules go on.
func TestAnItemOverTheLimitFailsItsModuleNamingIt(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.collector("ace", "zsh")
	m.contribute("ace", "small", "alias k=kubectl\n")
	m.contribute("ace", "big", strings.Repeat("# a long line of shell comment.\n", 600*1024/32))
	m.client("ace")
	r := m.waitState("ace", "big", "failed")
	why := fmt.Sprint(r["reason"])
	if !contains(why, "collection "+zshColl) || !contains(why, "over the limit of 524288 bytes (512 KiB") {
		t.Errorf("reason %.300q does not name the collection and the limit", why)
	}
	m.waitState("ace", "zsh", "applied")
	m.waitState("ace", "web", "applied")
	if keys := m.keysUnder(spec.CollectBucket, "ace."); len(keys) != 1 {
		t.Errorf("collect keys %v, want small's alone", keys)
	}
}

// An item whose text is not UTF-8 fails its module naming the collection:
// kept in the bucket as a JSON string, it would hold U+FFFD where the
// collectors' files hold other bytes. The other contributors stay.
func TestAnItemThatIsNotUTF8FailsItsModuleNamingTheCollection(t *testing.T) {
	m := newMesh(t)
	m.collector("ace", "zsh")
	m.contribute("ace", "small", "alias k=kubectl\n")
	m.contribute("ace", "bytes", "x=a\xffb\n")
	m.client("ace")
	r := m.waitState("ace", "bytes", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "collection "+zshColl) || !contains(why, "not UTF-8 text") {
		t.Errorf("reason %q does not name the collection and say why", why)
	}
	m.waitState("ace", "zsh", "applied")
	if keys := m.keysUnder(spec.CollectBucket, "ace."); len(keys) != 1 {
		t.Errorf("collect keys %v, want small's alone", keys)
	}
}

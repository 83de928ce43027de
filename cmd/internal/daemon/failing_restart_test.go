package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// A module whose file is written but whose unit fails to restart
// (mesh-fill answers 500, the restart still owed) is not sent again at
// every retry tick: the client's retry tick here is 100 ms (its refill,
// which sends every file again, a minute), and over 1.5 s the unit is
// restarted at most 4 times (a tick, then two, four, eight apart), where
// it was restarted at every tick (16 in a run). The module stays
// failed with the unit's reason; once the unit is mended, the next try
// holds and the module is applied with no change of its own.
func TestAFailingRestartIsNotRunAtEveryTick(t *testing.T) {
	m := newMesh(t)
	dir := filepath.Dir(m.sock)
	runs, mended := filepath.Join(dir, "restarts"), filepath.Join(dir, "mended")
	sock := filepath.Join(dir, "failing.sock")
	script := fmt.Sprintf(`echo "$0 $1" >> %s; [ -e %s ] || { echo "unit $1 failed to start" >&2; exit 3; }`, runs, mended)
	fs := &fill.Server{Root: m.root, OnRequest: m.fills.add, Command: []string{"sh", "-c", script}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fs.Serve(ctx, sock)
	bustest.Eventually(t, 5*time.Second, func() error { _, err := os.Stat(sock); return err })
	ran := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "\n")
	}

	m.put(spec.ConfigBucket, "ace.web.port", "80")
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "web.service")}},
		map[string]string{"conf": "port ${config:port}\n"})
	m.client("ace", func(c *Config) {
		c.FillSocket, c.Recheck, c.Refill = sock, 100*time.Millisecond, time.Minute
	})
	m.waitFile("/etc/web.conf", "port 80\n")
	r := m.waitState("ace", "web", "failed")
	if why, _ := r["reason"].(string); !strings.Contains(why, "unit web.service failed to start") {
		t.Errorf("the module failed with %q, want the unit's reason", why)
	}
	first := ran()
	time.Sleep(1500 * time.Millisecond)
	// 0.1, 0.3, 0.7 and 1.5 s after the first failure at the most: a load
	// that slows the client makes fewer
	if n := ran() - first; n > 4 {
		t.Errorf("the failing restart ran %d more times in 1.5 s at a 100 ms retry tick, want at most 4", n)
	}
	r, _ = m.report("ace", "web")
	if why, _ := r["reason"].(string); r["state"] != "failed" || !strings.Contains(why, "unit web.service failed to start") {
		t.Errorf("the report meanwhile: %v, want failed with the unit's reason", r)
	}

	if err := os.WriteFile(mended, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m.waitState("ace", "web", "applied")
}

package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// slowRestart is how long the test's program takes to restart: longer
// than the 30 s the client used to wait for a fill's answer. A
// `systemctl restart` takes that long for any unit whose stop waits out
// systemd's TimeoutStopSec (90 s by default).
const slowRestart = 35 * time.Second

// A file whose change restarts a program that takes longer than 30 s to
// restart (a service slow to stop) is written and the program restarted;
// mesh-fill answers once the restart is done, within its own bound on a
// program (fill.ProgramTimeout). The client waits for that answer: the
// module goes from waiting to applied, its report listing the file
// `written`, and is never said failed. Before, the client gave up after
// 30 s: the module was reported failed ("fill socket …: not answering
// within 30s") while the restart it asked for was under way, and, sent
// again at the retry tick, ended applied with its file `unchanged`, the
// write of it never reported.
func TestARestartSlowerThanThirtySecondsIsNeverSaidFailed(t *testing.T) {
	m := newMesh(t)
	dir := filepath.Dir(m.sock)
	runs := filepath.Join(dir, "slow-restarts")
	sock := filepath.Join(dir, "slow.sock")
	script := fmt.Sprintf(`echo "$0 $1" >> %s; sleep %d`, runs, int(slowRestart/time.Second))
	fs := &fill.Server{Root: m.root, OnRequest: m.fills.add, Command: []string{"sh", "-c", script}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fs.Serve(ctx, sock)
	bustest.Eventually(t, 5*time.Second, func() error { _, err := os.Stat(sock); return err })

	var mu sync.Mutex
	var said []string
	sub, err := m.nc.Subscribe(spec.AppliedSubject("ace", "slow"), func(msg *nats.Msg) {
		var r struct{ State, Reason string }
		json.Unmarshal(msg.Data, &r)
		mu.Lock()
		said = append(said, r.State+" "+r.Reason)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	m.nc.Flush()

	m.put(spec.ConfigBucket, "ace.slow.model", "opus")
	m.assign("ace", "slow", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/slow.conf", "conf", "slow.service")}},
		map[string]string{"conf": "model = ${config:model}\n"})
	m.client("ace", func(c *Config) { c.FillSocket = sock })
	m.waitFile("/etc/slow.conf", "model = opus\n")
	r := m.waitStateFor("ace", "slow", "applied", slowRestart+60*time.Second)
	if got := reportFiles(r)["/etc/slow.conf"]; got != "written" {
		t.Errorf("the report lists /etc/slow.conf %q, want written: %v", got, r["files"])
	}
	m.settle()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range said {
		if strings.HasPrefix(s, "failed") {
			t.Errorf("the module was said failed while its program restarted: %q (all said: %q)", s, said)
		}
	}
	if b, _ := os.ReadFile(runs); string(b) != "restart slow.service\n" {
		t.Errorf("programs run: %q, want one restart", b)
	}
}

package daemon

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
)

// A client started again reads a module's templates archive from its
// state dir's cache (SPEC §3: kept by digest): until it is read the
// module is not reported waiting for it ("not fetched yet") and then
// applied again, two reports and events of a module that never moved
// (SPEC §5.3). The archive here is large (16 MiB of noise) so that its
// read takes longer than the rest of the load.
func TestARestartReportsNoModuleWaitingForAnArchiveItsCacheHolds(t *testing.T) {
	m := newMesh(t)
	noise := make([]byte, 16<<20)
	rand.Read(noise)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=1\n", "noise": string(noise)})
	state := t.TempDir()
	_, stop := m.startClient("ace", func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.settle()
	stop()
	os.Remove(filepath.Join(m.tmpl, "ace-web.tar.gz")) // only the cache holds it now

	sub, err := m.nc.SubscribeSync("prov.applied.ace.web")
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	m.client("ace", func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.settle()
	for {
		msg, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(string(msg.Data), `"waiting"`) {
			t.Errorf("the restart reported the module waiting: %s", msg.Data)
		}
	}
}

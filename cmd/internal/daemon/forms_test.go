package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func TestASeedFileIsKeptAndManagedFormsMergeIntoWhatIsThere(t *testing.T) {
	m := newMesh(t)
	for p, s := range map[string]string{
		"/etc/app/seed.conf":    "edited by a person\n",
		"/etc/app/keys.conf":    "# mine\nkeep=1\nport=1\n",
		"/etc/app/block.conf":   "before\n",
		"/etc/app/.placeholder": "",
	} {
		os.MkdirAll(filepath.Join(m.root, filepath.Dir(p)), 0o755)
		if err := writeFile(filepath.Join(m.root, p), s); err != nil {
			t.Fatal(err)
		}
	}
	m.put(spec.ConfigBucket, "ace.app.port", "8080")
	m.assign("ace", "app", nodes.Plan{Files: []nodes.FileSpec{
		{Path: "/etc/app/seed.conf", Template: "seed", Form: "seed"},
		{Path: "/etc/app/keys.conf", Template: "keys", Form: "managed-keys"},
		{Path: "/etc/app/block.conf", Template: "block", Form: "managed-block"},
	}}, map[string]string{
		"seed":  "from the template\n",
		"keys":  "port=${config:port}\nnew=yes\n",
		"block": "listen ${config:port}\n",
	})
	m.client("ace")
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/seed.conf", "edited by a person\n")
	m.waitFile("/etc/app/keys.conf", "# mine\nkeep=1\nport=8080\nnew=yes\n")
	m.waitFile("/etc/app/block.conf", "before\n# BEGIN mesh app\nlisten 8080\n# END mesh app\n")
}

// The bus goes away (the server is stopped and started again on the same
// store dir and port) while a value changes behind it: the client
// reconnects, reads every input again and fills from the current values,
// without being restarted.
func TestTheClientRefillsFromCurrentValuesAfterTheServerRestarts(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitFile("/etc/web/c.conf", "flavour = vanilla\n")

	bustest.Stop(m.s)
	m.s = bustest.Start(t, m.again)
	m.connect()
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	bustest.Eventually(m.t, 30*time.Second, func() error {
		got, _, err := m.file("/etc/web/c.conf")
		if err != nil || got != "flavour = mint\n" {
			return errorf("c.conf %q %v", got, err)
		}
		return nil
	})
	m.waitState("ace", "web", "applied")
}

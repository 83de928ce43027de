package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A managed-keys file sets the keys its template writes, and leaves every
// other line of the file as it is (SPEC §3). A value with a line break
// (here mesh-config's, for a key the template writes as "banner=") would
// add lines of its own to the rendered text, and each would be a key the
// node-engine sets: whoever may set the module's banner could set any key
// of a file the operator shares with it (admin=yes). The file fails,
// naming the placeholder; the file on disk and the node's other modules
// are untouched. A collection's text is lines by nature and is filled.
func TestAValueWithALineBreakSetsNoOtherKeyOfAManagedKeysFile(t *testing.T) {
	m := newMesh(t)
	p := filepath.Join(m.root, "/etc/app/keys.conf")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := writeFile(p, "# the operator's\nadmin=no\n"); err != nil {
		t.Fatal(err)
	}
	m.put(spec.ConfigBucket, "ace.app.banner", "hello\nadmin=yes")
	m.assign("ace", "app", nodes.Plan{Files: []nodes.FileSpec{
		{Path: "/etc/app/keys.conf", Template: "keys", Form: "managed-keys"},
	}}, map[string]string{"keys": "banner=${config:banner}\n"})
	m.webModule()
	m.client("ace")
	r := m.waitState("ace", "app", "failed")
	if why, _ := r["reason"].(string); !contains(why, "${config:banner}") || !contains(why, "line break") {
		t.Errorf("reason %q does not name the placeholder and its line break", why)
	}
	m.waitState("ace", "web", "applied")
	m.settle()
	m.waitFile("/etc/app/keys.conf", "# the operator's\nadmin=no\n")

	// The value without its line break is written where the template says.
	m.put(spec.ConfigBucket, "ace.app.banner", "hello")
	m.waitFile("/etc/app/keys.conf", "# the operator's\nadmin=no\nbanner=hello\n")
	m.waitState("ace", "app", "applied")
}

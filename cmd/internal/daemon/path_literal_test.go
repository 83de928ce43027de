package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A plan's path is no template (SPEC §4.1: placeholders are a template's):
// a path holding "${config:x}" is written as it reads, nothing is asked
// for it, and no need is recorded.
func TestAPlaceholderInAPathIsNotExpanded(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.app.x", "expanded")
	m.assign("ace", "app", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/app/${config:x}.conf", Template: "t"}}},
		map[string]string{"t": "plain\n"})
	m.client("ace")
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/app/${config:x}.conf", "plain\n")
	if _, _, err := m.file("/etc/app/expanded.conf"); err == nil {
		t.Error("the path was expanded")
	}
	m.settle()
	if keys := m.needKeys("ace.app."); len(keys) > 0 {
		t.Errorf("needs recorded for a path: %q", keys)
	}
}

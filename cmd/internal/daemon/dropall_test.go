package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A plan that drops every file while the client runs has the node-engine
// remove them: one whole request naming none (SPEC §4.3 r2).
func TestAPlanThatDropsEveryFileLosesThem(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=1\n"})
	m.client("ace", f.socket)
	m.waitFile("/etc/web.conf", "port=1\n")
	m.waitState("ace", "web", "applied")
	m.assign("ace", "web", nodes.Plan{Placement: map[string]map[string]string{"port": {"x": "1"}}}, nil)
	m.waitNoFile("/etc/web.conf")
	m.waitState("ace", "web", "applied")
}

package daemon

import (
	"fmt"
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A plan naming one path below another (a file /etc/app/conf and a
// secret at /etc/app/conf/key) names a file that would be a directory
// too: no node-engine can write both. The module fails at once, the
// reason naming both entries, and nothing of it is sent to the
// node-engine; before, each fill was refused (mesh-fill: 400) and tried
// again for as long as the plan stood.
func TestAPlanNamingAPathBelowAnotherOfItsPathsFailsAtOnce(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.devVault().Set(t.Context(), "own/app/key", []byte("k1"))
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/conf", Template: "t"}, {Path: "/etc/app/conf-d", Template: "t"}},
		Secrets: []nodes.SecretSpec{{Name: "key", Path: "/etc/app/conf/key"}},
	}, map[string]string{"t": "x\n"})
	m.client("ace")

	m.waitState("ace", "web", "applied")
	r := m.waitState("ace", "app", "failed")
	why := fmt.Sprint(r["reason"])
	for _, says := range []string{"secrets[0] (key)", "/etc/app/conf/key", "files[0] (/etc/app/conf)"} {
		if !contains(why, says) {
			t.Errorf("reason %q does not say %q", why, says)
		}
	}
	m.settle()
	if sent := m.fills.since(0); slices.Contains(sent, "/etc/app/conf") || slices.Contains(sent, "/etc/app/conf-d") {
		t.Errorf("the module's files were sent to the node-engine: %q", sent)
	}
}

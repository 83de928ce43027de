package daemon

import (
	"fmt"
	"slices"
	"strings"
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

// A path longer than Linux takes (4095 bytes) or holding a name longer
// than 255 bytes cannot be written by any node-engine: the module fails at
// once naming the entry and the limit, and nothing of it is sent; before,
// every fill was refused (mesh-fill: 400) for as long as the plan stood.
func TestAPathLongerThanLinuxTakesFailsAtOnce(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	long := "/etc/" + strings.Repeat("a", 256)
	deep := strings.Repeat("/abcdefgh", 512)
	m.assign("ace", "name", nodes.Plan{Files: []nodes.FileSpec{{Path: long, Template: "t"}}}, map[string]string{"t": "x\n"})
	m.assign("ace", "deep", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/ok", Template: "t"}},
		Secrets: []nodes.SecretSpec{{Name: "k", Path: deep}}}, map[string]string{"t": "x\n"})
	m.devVault().Set(t.Context(), "own/deep/k", []byte("k1"))
	m.client("ace")

	m.waitState("ace", "web", "applied")
	for module, says := range map[string][]string{
		"name": {"files[0]: path", "an element of 256 bytes", "at most 255"},
		"deep": {"secrets[0] (k): path", "4608 bytes", "at most 4095"},
	} {
		why := fmt.Sprint(m.waitState("ace", module, "failed")["reason"])
		for _, s := range says {
			if !contains(why, s) {
				t.Errorf("%s: reason %q does not say %q", module, why, s)
			}
		}
	}
	m.settle()
	if sent := m.fills.since(0); slices.Contains(sent, long) || slices.Contains(sent, "/etc/ok") {
		t.Errorf("a failed module's files were sent to the node-engine: %d paths", len(sent))
	}
}

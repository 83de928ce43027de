package daemon

import (
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A plan's mode that lets others write a file the client sends with it
// (0666 on a file holding no secret) fails the module at once, naming the
// file and the mode, and nothing of it goes to the node-engine: mesh-fill
// refuses such a mode (400), and before, the client sent the module's
// files again at every retry tick (every 5 s, for ever), each refused. A
// file holding a secret is written 0600 whatever the plan says (SPEC §3),
// so its plan's 0666 is no refusal: that module is applied, the file 0600.
func TestAModeOthersMayWriteFailsTheModuleAtOnceUnlessTheFileHoldsASecret(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{
		{Path: "/etc/web/ok.conf", Template: "conf"},
		{Path: "/etc/web/conf", Template: "conf", Mode: "0666"},
	}}, map[string]string{"conf": "port 80\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/app/api-key", []byte("k1"))
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/other.conf", Template: "other", Mode: "0666"}},
		Secrets: []nodes.SecretSpec{{Name: "api-key"}},
	}, map[string]string{"other": "key = ${secret:api-key}\n"})
	m.client("ace")

	r := m.waitState("ace", "web", "failed")
	if want := `files[1] (/etc/web/conf): mode "0666" lets others write the file`; !contains(r["reason"].(string), want) {
		t.Errorf("reason %q, want it to say %q", r["reason"], want)
	}
	m.waitState("ace", "app", "applied")
	if got := mode(t, m, "/etc/app/other.conf"); got != "0600" {
		t.Errorf("a file holding a secret, its plan's mode 0666, is %s, want 0600", got)
	}
	m.settle()
	if sent := m.fills.since(0); slices.Contains(sent, "/etc/web/conf") || slices.Contains(sent, "/etc/web/ok.conf") {
		t.Errorf("the module's files were sent to the node-engine: %q", sent)
	}
}

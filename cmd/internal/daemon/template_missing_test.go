package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A file or an item naming a template its archive does not hold fails its
// module, the reason naming the template, the file or item that names it
// and the archive; nothing of the module is written, and the other
// modules are filled. A plan naming it in a new archive is applied.
func TestATemplateTheArchiveLacksFailsItsModuleNamingTheFileAndTheArchive(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	plan := nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/app/ok.conf", Template: "ok"}, {Path: "/etc/app/app.conf", Template: "app.conf"}},
		Items: []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "zsh-item.sh"}},
	}
	m.assign("ace", "app", plan, map[string]string{"ok": "ok\n", "app.conf.tmpl": "x\n"})
	ref := "file://" + filepath.Join(m.tmpl, "ace-app.tar.gz")
	m.client("ace")

	m.waitState("ace", "web", "applied")
	r := m.waitState("ace", "app", "failed")
	why := fmt.Sprint(r["reason"])
	for _, says := range []string{`template "app.conf"`, "files[1] (/etc/app/app.conf)", `template "zsh-item.sh"`,
		"items[0] (shell:zsh:normal)", "is not in the templates archive sha256:", "… (the plan's digest; ref " + ref + ")"} {
		if !contains(why, says) {
			t.Errorf("reason %q does not say %q", why, says)
		}
	}
	if _, err := os.Stat(filepath.Join(m.root, "etc", "app")); err == nil {
		t.Error("a file of the failed module was written")
	}

	m.assign("ace", "app", plan, map[string]string{"ok": "ok\n", "app.conf": "x\n", "zsh-item.sh": "alias a=b\n"})
	m.waitFile("/etc/app/app.conf", "x\n")
	m.waitState("ace", "app", "applied")
}

package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A managed-block or managed-keys file whose plan names no mode is someone
// else's file edited in place: one that is there keeps its mode (sudoers
// its 0440, an env file its 0640: not opened to every local user), one
// made is 0644 (SPEC §3's default), across refills too; a mode the plan
// names, or 0600 for a file holding a secret, is still set.
func TestAManagedFileWhosePlanNamesNoModeKeepsTheModeItHas(t *testing.T) {
	m := newMesh(t)
	for p, md := range map[string]os.FileMode{"/etc/sudoers": 0o440, "/etc/default/app": 0o640, "/etc/named.conf": 0o640} {
		full := filepath.Join(m.root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("# theirs\n"), md); err != nil {
			t.Fatal(err)
		}
		os.Chmod(full, md)
	}
	m.put(spec.ConfigBucket, "ace.app.user", "deploy")
	m.assign("ace", "app", nodes.Plan{Files: []nodes.FileSpec{
		{Path: "/etc/sudoers", Template: "sudo", Form: "managed-block"},
		{Path: "/etc/default/app", Template: "env", Form: "managed-keys"},
		{Path: "/etc/app/new.conf", Template: "sudo", Form: "managed-block"},
		{Path: "/etc/named.conf", Template: "sudo", Form: "managed-block", Mode: "0600"},
	}}, map[string]string{
		"sudo": "${config:user} ALL=(ALL) NOPASSWD: /usr/bin/systemctl\n",
		"env":  "USER=${config:user}\n",
	})
	m.client("ace", refillEvery(200*time.Millisecond))
	m.waitState("ace", "app", "applied")
	m.waitFile("/etc/default/app", "# theirs\nUSER=deploy\n")
	want := map[string]string{"/etc/sudoers": "0440", "/etc/default/app": "0640", "/etc/app/new.conf": "0644", "/etc/named.conf": "0600"}
	check := func() {
		t.Helper()
		for p, w := range want {
			if got := mode(t, m, p); got != w {
				t.Errorf("%s: mode %s, want %s", p, got, w)
			}
		}
	}
	check()
	from := m.fills.count()
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := len(m.fills.requests("app", from)); n < 2 {
			return fmt.Errorf("%d refills so far", n)
		}
		return nil
	})
	check()
}

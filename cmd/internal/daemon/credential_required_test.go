package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestAProvisionsEntryWithoutACredentialFailsItsModuleThroughTheDaemon is
// SPEC §3 r2 end to end (the daemon, a real bus, the dev vault and
// mesh-fill): a provisions entry without the offer's credential form
// fails its module, the report in mesh-provisioner_applied and the
// prov.applied event naming the entry and the word credential; nothing of
// the module is asked of the vault or written, and the module beside it
// is applied. Once the plan names the form the module is applied, and the
// entry's request carries the form (SPEC §4.2 r2).
func TestAProvisionsEntryWithoutACredentialFailsItsModuleThroughTheDaemon(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "good", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/good/g.conf", Template: "g"}}},
		map[string]string{"g": "fine\n"})
	p := nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/cc/cc.conf", Template: "t"}},
		Provisions: []nodes.ProvisionSpec{
			{Name: "read", Provision: "gitea-read", Provider: "gitea", Credential: "token", Path: "/etc/cc/read"},
			{Name: "clone", Provision: "gitea-clone", Provider: "gitea", Path: "/etc/cc/clone"}, // no credential
		},
	}
	templates := map[string]string{"t": "read=${secret:read}\nclone=${secret:clone}\n"}
	m.assign("ace", "cc", p, templates)
	v := m.devVault()
	read := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "cc", "")
	clone := spec.ProvisionSecretName("gitea", "gitea-clone", "ace", "cc", "")
	v.Set(t.Context(), read, []byte("r-1"))
	v.Set(t.Context(), clone, []byte("c-1"))
	v.SetForm(read, "token")
	v.SetForm(clone, "ssh-key")

	events := make(chan *nats.Msg, 64)
	sub, err := m.nc.ChanSubscribe("prov.applied.ace.cc", events)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	m.nc.Flush()

	m.client("ace")
	const entry = "provisions[1] (gitea-clone)"
	r := m.waitState("ace", "cc", "failed")
	if why, _ := r["reason"].(string); !strings.Contains(why, entry) || !strings.Contains(why, "credential") {
		t.Errorf("the failed report's reason %q does not name %s and the word credential", why, entry)
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		select {
		case msg := <-events:
			var ev struct{ State, Reason string }
			json.Unmarshal(msg.Data, &ev)
			if ev.State == "failed" && strings.Contains(ev.Reason, entry) && strings.Contains(ev.Reason, "credential") {
				return nil
			}
			return fmt.Errorf("event %s", msg.Data)
		default:
			return fmt.Errorf("no failed event on prov.applied.ace.cc naming %s", entry)
		}
	})
	m.waitState("ace", "good", "applied")
	m.waitFile("/etc/good/g.conf", "fine\n")
	for _, path := range []string{"/etc/cc/cc.conf", "/etc/cc/read", "/etc/cc/clone"} {
		if _, _, err := m.file(path); err == nil {
			t.Errorf("%s was written for a module whose plan is refused", path)
		}
	}
	for _, a := range v.Asks() {
		if a.Module == "cc" {
			t.Errorf("the vault was asked %s for a module whose plan is refused", a.Secret)
		}
	}

	p.Provisions[1].Credential = "ssh-key"
	m.assign("ace", "cc", p, templates)
	m.waitState("ace", "cc", "applied")
	m.waitFile("/etc/cc/cc.conf", "read=r-1\nclone=c-1\n")
	m.waitFile("/etc/cc/clone", "c-1")
	want := map[string]string{read: "token", clone: "ssh-key"}
	for _, a := range v.Asks() {
		if a.Module == "cc" && (a.Credential != want[a.Secret] || a.Outcome != "sealed") {
			t.Errorf("ask of %s carried credential %q (%s %s), want %q", a.Secret, a.Credential, a.Outcome, a.Reason, want[a.Secret])
		}
	}
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Two holders of one provision (locals "" and "second") are two vault
// names, provision/<provider>/<provision>/<node>/<module>[/<local>], so
// they get two credentials; each request carries the entry's credential
// form, which the dev vault checks (SPEC §4.2 r2); the own secret's
// request carries none.
func TestTwoHoldersOfOneProvisionGetTwoCredentials(t *testing.T) {
	m := newMesh(t)
	p := nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/both.conf", Template: "both"}},
		Secrets: []nodes.SecretSpec{{Name: "api-key"}},
		Provisions: []nodes.ProvisionSpec{
			{Name: "tok-a", Provision: "gitea-read", Provider: "gitea", Credential: "token", Path: "/etc/app/a"},
			{Name: "tok-b", Provision: "gitea-read", Provider: "gitea", Credential: "ssh-key", Local: "second", Path: "/etc/app/b"},
		},
	}
	m.assign("ace", "app", p, map[string]string{"both": "a=${secret:tok-a}\nb=${secret:tok-b}\nk=${secret:api-key}\n"})
	v := m.devVault()
	first := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "app", "")
	second := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "app", "second")
	if second != first+"/second" {
		t.Fatalf("second holder's name %q", second)
	}
	v.Set(t.Context(), first, []byte("t-1"))
	v.Set(t.Context(), second, []byte("t-2"))
	v.Set(t.Context(), ownApp, []byte("k-3"))
	v.SetForm(first, "token")
	v.SetForm(second, "ssh-key")
	m.client("ace")

	m.waitFile("/etc/app/a", "t-1")
	m.waitFile("/etc/app/b", "t-2")
	m.waitFile("/etc/app/both.conf", "a=t-1\nb=t-2\nk=k-3\n")
	m.waitState("ace", "app", "applied")
	want := map[string]string{first: "token", second: "ssh-key", ownApp: ""}
	for _, a := range v.Asks() {
		if form, ok := want[a.Secret]; !ok || a.Credential != form {
			t.Errorf("ask of %s carried credential %q (outcome %s %s)", a.Secret, a.Credential, a.Outcome, a.Reason)
		}
	}
}

// A plan that changes only an entry's credential form keeps the vault name
// (and the value held), and has the name asked again at once with the new
// form, which the vault acts on (SPEC §4.2 r2); every later ask carries it.
func TestAChangedCredentialFormIsAskedAgainWithTheNewForm(t *testing.T) {
	m := newMesh(t)
	p := nodes.Plan{Provisions: []nodes.ProvisionSpec{
		{Name: "tok", Provision: "gitea-read", Provider: "gitea", Credential: "token", Path: "/etc/app/a"},
	}}
	m.assign("ace", "app", p, nil)
	v := m.devVault()
	name := spec.ProvisionSecretName("gitea", "gitea-read", "ace", "app", "")
	v.Set(t.Context(), name, []byte("t-1"))
	v.SetForm(name, "token")
	m.client("ace")
	m.waitFile("/etc/app/a", "t-1")
	m.waitState("ace", "app", "applied")

	v.SetForm(name, "ssh-key") // the provider issues it as an ssh key now
	p.Provisions[0].Credential = "ssh-key"
	m.assign("ace", "app", p, nil)
	bustest.Eventually(t, 10*time.Second, func() error {
		for _, a := range v.Asks() {
			if a.Secret == name && a.Credential == "ssh-key" && a.Outcome == "sealed" {
				return nil
			}
		}
		return fmt.Errorf("no ask of %s with the new form: %+v", name, v.Asks())
	})
	v.Set(t.Context(), name, []byte("k-2")) // rotated: secret-changed
	m.waitFile("/etc/app/a", "k-2")
	m.waitState("ace", "app", "applied")
	for _, a := range v.Asks() {
		if a.Outcome != "sealed" {
			t.Errorf("ask of %s with form %q: %s %s", a.Secret, a.Credential, a.Outcome, a.Reason)
		}
	}
}

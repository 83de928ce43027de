package daemon

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A secret-changed naming a provisions entry's credential that comes in
// the same batch as the plan naming it (the vault rotated it as the
// controller assigned the module) asks with the entry's credential form,
// as every request for a provision/ name does (SPEC §4.2 r2): the ask it
// started went out without "credential", and a vault acting on the form
// refused it, failing the module for a moment.
//
// The loop is held while the plans' updates and the events naming their
// credentials queue up; which of a pair the loop takes first is its
// select's pick, so the test makes several rounds of many pairs.
func TestASecretChangedInTheBatchThatNamesACredentialAsksWithItsForm(t *testing.T) {
	m := newMesh(t)
	v := m.devVault()
	const rounds, n = 4, 32
	name := func(r, i int) string {
		return spec.ProvisionSecretName("gitea", "gitea-read", "ace", fmt.Sprintf("app%d-%d", r, i), "")
	}
	for r := range rounds {
		for i := range n {
			v.Set(t.Context(), name(r, i), []byte("t-1"))
			v.SetForm(name(r, i), "token")
		}
	}
	d := m.client("ace") // after the sets: their own secret-changed events are not the test's
	m.settle()
	for r := range rounds {
		release, held := make(chan struct{}), make(chan struct{})
		go d.Do(context.Background(), func(*nodes.NodeGraph) { close(held); <-release })
		<-held
		for i := range n {
			m.assign("ace", fmt.Sprintf("app%d-%d", r, i), nodes.Plan{Provisions: []nodes.ProvisionSpec{
				{Name: "tok", Provision: "gitea-read", Provider: "gitea", Credential: "token", Path: fmt.Sprintf("/etc/app%d-%d/tok", r, i)},
			}}, nil)
		}
		time.Sleep(200 * time.Millisecond) // the watch has the updates
		for i := range n {
			m.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"`+name(r, i)+`"}`))
		}
		m.nc.Flush()
		time.Sleep(200 * time.Millisecond)
		close(release)
		for i := range n {
			m.waitFile(fmt.Sprintf("/etc/app%d-%d/tok", r, i), "t-1")
		}
		m.settle()
	}
	for _, a := range v.Asks() {
		if a.Credential != "token" {
			t.Errorf("%s asked with form %q (%s: %s), want %q", a.Secret, a.Credential, a.Outcome, a.Reason, "token")
		}
	}
}

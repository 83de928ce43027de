package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A provider's consumers list that waits for the vault (restarted with the
// vault down: it has answered none of the list's credentials) says which
// credentials it waits for. When a consumer unbinds meanwhile, the need in
// mesh-provisioner_needs and the provider's report stop naming the
// credential of a consumer no longer bound (SPEC §4.5: one entry per
// consumer bound; §5.2: a need is written when it changes), as explain
// already did. Before, the list's new why stopped at the list: a derived
// node whose own why moved while it still waited touched no module, so
// the need and the report named the unbound consumer until the vault came
// back.
func TestAConsumerUnboundWhileTheListWaitsForTheVaultIsNoLongerNamed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	state := t.TempDir()
	v, _, stop := m.providerOfTwoConsumers(f, state, ctlSock(t))
	stop()
	v.Stop() // the vault is down: asks get no reply
	m.client("ace", f.socket, func(c *Config) { c.StateDir = state }, withControl(ctlSock(t)))
	const why = "the vault has given no answer"
	m.waitWaiting("ace", "gitea", `"kind":"consumers"`, why, pair("g14", "cc", ""), pair("ace", "dd", ""))

	m.del(spec.AssignmentsBucket, "g14.cc")
	gone := pair("g14", "cc", "")
	bustest.Eventually(t, 10*time.Second, func() error {
		need, _ := m.get(spec.NeedsBucket, "ace.gitea.consumers.gitea-read")
		r, _ := m.report("ace", "gitea")
		rep := fmt.Sprint(r["waiting"])
		for what, s := range map[string]string{"need": need, "report": rep} {
			if contains(s, gone) || !contains(s, why) || !contains(s, pair("ace", "dd", "")) {
				return fmt.Errorf("the %s says %s", what, s)
			}
		}
		return nil
	})
}

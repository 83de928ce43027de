package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A client started again that changes nothing puts no report again (SPEC
// §5.3), also of a module whose files hold a secret: their digests are
// keyed with a key of each run's own, so each restart put every such
// report again with new digests and published its event (an outside
// audit: a restart's reports moved only by their keyed digests). A file
// the node-engine finds as sent keeps the digest the last run's report
// says: an owned file holding a secret, a secret's own path, a consumers
// list.
func TestARestartThatChangesNothingPutsNoReportOfAModuleHoldingASecret(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	v := m.devVault()
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{owned("/etc/app/app.conf", "c", "app.service")},
		Secrets: []nodes.SecretSpec{{Name: "api-key", Path: "/etc/app/api-key"}},
	}, map[string]string{"c": "key = ${secret:api-key}\n"})
	v.Set(t.Context(), "own/app/api-key", []byte("PLANTED-restart-secret"))
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("PLANTED-paired"))
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "app", "applied")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.waitState("ace", "gitea", "applied")
	m.restartMovesNothing(stop, func() { m.client("ace", f.socket, func(c *Config) { c.StateDir = state }) }, "app", "gitea")
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// reloadRights reloads m's server (exampleBus) with examples/nats/server.conf,
// user's publish rights denied the subjects deny names (none: as shipped).
func (m *mesh) reloadRights(user string, deny ...string) {
	m.t.Helper()
	o := authtest.ConfigOptions(m.t, "../../../examples/nats/server.conf")
	bustest.Same(m.s)(o)
	o.NoLog, o.NoSigs = true, true
	found := false
	for _, u := range o.Users {
		if u.Username != user {
			continue
		}
		found = true
		if len(deny) > 0 {
			p := *u.Permissions
			pub := *p.Publish
			pub.Deny = append(append([]string{}, pub.Deny...), deny...)
			p.Publish = &pub
			u.Permissions = &p
		}
	}
	if !found {
		m.t.Fatalf("no user %s in the example config", user)
	}
	if err := m.s.ReloadOptions(o); err != nil {
		m.t.Fatal(err)
	}
}

// The client's rights narrowed at runtime (a nats-server config reload
// that, by mistake, denies it writing its reports) and given back: the
// value changed meanwhile is filled, its report, refused by the bus, is
// written once the rights are back, with no further change.
func TestAReportRefusedByARightsReloadIsWrittenOnceTheRightsAreBack(t *testing.T) {
	m := exampleBus(t)
	m.webModule()
	m.client("ace", asUser("provisioner-ace"))
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
	before := m.waitState("ace", "web", "applied")

	m.reloadRights("provisioner-ace", "$KV."+spec.AppliedBucket+".>")
	m.put(spec.ConfigBucket, "ace.web.model", "haiku")
	m.waitFile("/etc/web/a.conf", "model = haiku\nport = 8080\n")
	time.Sleep(time.Second)
	if r, _ := m.report("ace", "web"); fmt.Sprint(r["files"]) != fmt.Sprint(before["files"]) {
		t.Fatalf("the report was written while the bus refused it: %v", r)
	}

	m.reloadRights("provisioner-ace")
	bustest.Eventually(t, 15*time.Second, func() error {
		r, _ := m.report("ace", "web")
		if r["state"] != "applied" || fmt.Sprint(r["files"]) == fmt.Sprint(before["files"]) {
			return fmt.Errorf("report %v, still the one before the change", r)
		}
		return nil
	})
}

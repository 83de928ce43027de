package daemon

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A config value deleted moved too (SPEC §5.4): prov.changed names its key,
// and an ask for it is answered with an error after it.
func TestAConfigDeletePublishesChangedNamingTheKey(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.ConfigBucket, "ace.web.extra", "x")
	m.client("ace")
	m.waitState("ace", "web", "applied")
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	m.nc.Flush()
	m.del(spec.ConfigBucket, "ace.web.extra")
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.web" || string(msg.Data) != `{"key":"extra","kind":"config"}` {
		t.Fatalf("delete event %v %v", msg, err)
	}
	if r := askFor(t, m, "ace", `{"module":"web","kind":"config","key":"extra"}`); r["error"] == "" {
		t.Fatalf("a deleted key answered %v", r)
	}
}

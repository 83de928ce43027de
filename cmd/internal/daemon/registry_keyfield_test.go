package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The registry says where each kind lives: its bucket, its key and, for
// a placement kind, the plan's field. An entry naming a key or a field
// other than the one this client reads, or another kind, is not followed
// blindly: the kind's needs wait saying so, as for another bucket or verb.
func TestARegistryEntryNamingAnotherKeyOrFieldIsWaitedOn(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	dir, _ := m.get(spec.RegistryBucket, "dir")
	config, _ := m.get(spec.RegistryBucket, "config")
	secret, _ := m.get(spec.RegistryBucket, "secret")
	for _, c := range []struct{ kind, entry, value, says string }{
		// secret's entry put at config's key (a copy and paste by hand):
		// no field of it names another bucket, and config's entry names
		// no verb, so only its kind says it is not config's.
		{"config", config, secret, "the registry's entry for kind config is kind secret's"},
		{"dir", dir, strings.Replace(dir, "provisioning.placement.dir", "provisioning.placement.port", 1),
			"the registry says kind dir is field provisioning.placement.port; this client reads it from provisioning.placement.dir"},
		{"config", config, strings.Replace(config, "<node>.<module>.<key>", "<module>.<key>", 1),
			"the registry says kind config is at key <module>.<key>; this client reads it at <node>.<module>.<key>"},
	} {
		m.put(spec.RegistryBucket, c.kind, c.value)
		bustest.Eventually(t, 10*time.Second, func() error { // the whys as they are (waitWaiting's JSON escapes < and >)
			r, _ := m.report("ace", "web")
			if r["state"] == "waiting" {
				for _, w := range r["waiting"].([]any) {
					if w := w.(map[string]any); w["kind"] == c.kind && w["why"] == c.says {
						return nil
					}
				}
			}
			return fmt.Errorf("report %v does not say %q", r, c.says)
		})
		m.put(spec.RegistryBucket, c.kind, c.entry)
		m.waitState("ace", "web", "applied")
	}
}

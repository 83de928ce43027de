package daemon

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// appliedEvents records the subjects of every prov.applied event of node.
func (m *mesh) appliedEvents(node string) func() []string {
	m.t.Helper()
	return m.subjects("prov.applied." + node + ".>")
}

// subjects records the subject of every message on subject (a wildcard).
func (m *mesh) subjects(subject string) func() []string {
	m.t.Helper()
	var mu sync.Mutex
	var subjects []string
	sub, err := m.nc.Subscribe(subject, func(msg *nats.Msg) {
		mu.Lock()
		subjects = append(subjects, msg.Subject)
		mu.Unlock()
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	m.t.Cleanup(func() { sub.Unsubscribe() })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), subjects...) }
}

// needKeys lists the keys of the needs bucket under prefix (<node>.<module>.).
func (m *mesh) needKeys(prefix string) []string { return m.keysUnder(spec.NeedsBucket, prefix) }

// keysUnder lists the keys of bucket under prefix (tokens ending in ".").
func (m *mesh) keysUnder(bucket, prefix string) []string {
	lister, err := m.kv(bucket).ListKeysFiltered(m.t.Context(), prefix+">")
	if err != nil {
		m.t.Fatal(err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	return keys
}

// An assignment whose value carries no "provisioning" is not the
// provisioner's (SPEC §3 r2): no report, no needs, no event; one that loses
// its provisioning goes as if deleted. node and module may be left out of
// a plan's value (taken from the key).
func TestAnAssignmentWithoutProvisioningIsNoModule(t *testing.T) {
	m := newMesh(t)
	events, changed := m.appliedEvents("ace"), m.subjects("prov.changed.ace.>")
	m.put(spec.AssignmentsBucket, "ace.other", `{"node":"ace","module":"other","runs":{"unit":"other.service"}}`)
	m.put(spec.AssignmentsBucket, "ace.bare", `{}`)
	// web's value without node and module: they are the key's.
	p := webPlan()
	p.Files = p.Files[1:2] // b.conf: state = ${dir:state}
	p.Templates.Ref, p.Templates.Digest = m.archive("web", webTemplates)
	b, _ := json.Marshal(map[string]any{"provisioning": p})
	m.put(spec.AssignmentsBucket, "ace.web", string(b))
	m.client("ace")
	m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
	m.waitState("ace", "web", "applied")
	m.settle() // an event for other or bare would be out by now
	for _, mod := range []string{"other", "bare"} {
		if r, ok := m.report("ace", mod); ok {
			t.Errorf("%s has a report: %v", mod, r)
		}
		if keys := m.needKeys("ace." + mod + "."); len(keys) > 0 {
			t.Errorf("%s has needs %v", mod, keys)
		}
	}
	for _, s := range append(events(), changed()...) {
		if s != "prov.applied.ace.web" && s != "prov.changed.ace.web" {
			t.Errorf("event on %s", s)
		}
	}
	if !slices.Contains(changed(), "prov.changed.ace.web") {
		t.Errorf("no prov.changed for web at start: %v", changed())
	}
	if !contains(m.logs.String(), `not the provisioner's`) {
		t.Errorf("no log line says an assignment was ignored")
	}

	// web loses its provisioning: its report and needs go, as if deleted.
	m.put(spec.AssignmentsBucket, "ace.web", `{"node":"ace","module":"web"}`)
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if _, ok := m.report("ace", "web"); ok {
			return fmt.Errorf("web's report is still there")
		}
		if keys := m.needKeys("ace.web."); len(keys) > 0 {
			return fmt.Errorf("web's needs are still there: %v", keys)
		}
		return nil
	})
}

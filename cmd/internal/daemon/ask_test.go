package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

func askFor(t *testing.T, m *mesh, node, body string) map[string]string {
	t.Helper()
	msg, err := m.nc.Request("prov.ask."+node, []byte(body), 3*time.Second)
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	var r map[string]string
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatalf("reply %q: %v", msg.Data, err)
	}
	return r
}

func TestProvAskAnswersOnlyAnAssignedModulesConfigValue(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.web.model", "opus")
	m.put(spec.ConfigBucket, "ace.web.flavour", "vanilla")
	m.put(spec.ConfigBucket, "ace.ghost.model", "boo")
	m.assign("ace", "web", webPlan(), webTemplates)
	m.client("ace")
	m.waitState("ace", "web", "applied")
	if r := askFor(t, m, "ace", `{"module":"web","kind":"config","key":"model"}`); r["value"] != "opus" || r["error"] != "" {
		t.Fatalf("assigned key: %v", r)
	}
	for body, why := range map[string]string{
		`{"module":"ghost","kind":"config","key":"model"}`: "not assigned",
		`{"module":"web","kind":"config","key":"nope"}`:    "no config value nope",
		`{"module":"web","kind":"secret","key":"api-key"}`: "kind secret",
		`not json`: "request is not",
	} {
		r := askFor(t, m, "ace", body)
		if r["value"] != "" || !contains(r["error"], why) {
			t.Errorf("%s: %v, want an error naming %q", body, r, why)
		}
	}
}

func TestAConfigPutPublishesOneChangedEventNamingTheKeyAndNoValue(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	m.client("ace")
	first, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(first.Data) != `{"kind":"config"}` || first.Subject != "prov.changed.ace.web" {
		t.Fatalf("start event %v %v", first, err)
	}
	m.waitState("ace", "web", "applied")
	m.put(spec.ConfigBucket, "ace.web.model", "haiku-secret-looking-value")
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(msg.Data) != `{"key":"model","kind":"config"}` {
		t.Fatalf("change event %v %v", msg, err)
	}
	if extra, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("a second event: %s", extra.Data)
	}
}

// A module assigned after start, and one that leaves, are announced on
// prov.changed (SPEC §5.4 r2), so a tool runner told "not assigned" knows
// when to ask again.
func TestAModuleAssignedOrLeavingAfterStartPublishesChanged(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	sub, _ := m.nc.SubscribeSync("prov.changed.ace.>")
	m.nc.Flush()

	m.assign("ace", "late", nodes.Plan{}, nil)
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.late" || string(msg.Data) != `{"kind":"config"}` {
		t.Fatalf("assign event %v %v", msg, err)
	}
	m.assign("ace", "late", nodes.Plan{Placement: map[string]map[string]string{"port": {"http": "1"}}}, nil)
	if extra, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("a changed plan of an assigned module published %s %s", extra.Subject, extra.Data)
	}
	m.del(spec.AssignmentsBucket, "ace.late")
	msg, err = sub.NextMsg(5 * time.Second)
	if err != nil || msg.Subject != "prov.changed.ace.late" || string(msg.Data) != `{"gone":true,"kind":"config"}` {
		t.Fatalf("leave event %v %v", msg, err)
	}
	if extra, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("a second event: %s %s", extra.Subject, extra.Data)
	}
}

// A tool runner asking while the client starts is not told a module on the
// node is not assigned (SPEC §5.4: "not assigned" sends it away until
// prov.changed says otherwise): an ask answered before the assignments
// and config are first read waits for them. Before, asks made as the
// client read a large config snapshot were answered "module web is not
// assigned to node ace".
func TestAnAskWhileTheClientStartsIsAnsweredFromWhatItRead(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.web.model", "opus")
	m.assign("ace", "web", webPlan(), webTemplates)
	js, err := jetstream.New(m.nc, jetstream.WithPublishAsyncMaxPending(1<<14))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30000 { // a snapshot the client takes a while to read
		if i%4096 == 4095 {
			<-js.PublishAsyncComplete()
		}
		if _, err := js.PublishAsync(fmt.Sprintf("$KV.%s.ace.web.k%d", spec.ConfigBucket, i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Fatal("the config keys were not all put")
	}
	m.client("ace")
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		msg, err := m.nc.Request("prov.ask.ace", []byte(`{"module":"web","kind":"config","key":"model"}`), 10*time.Second)
		if err != nil {
			continue // not subscribed yet: no responders
		}
		var r map[string]string
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatalf("reply %q: %v", msg.Data, err)
		}
		if r["value"] == "opus" {
			return
		}
		if !contains(r["error"], "starting") {
			t.Fatalf("an ask as the client starts was answered %v", r)
		}
	}
	t.Fatal("no ask was answered with the value in 30 s")
}

// A module whose assignment to the node carries no "provisioning" (SPEC §3
// r2) was answered "module other is not assigned to node ace": it is, only
// not to the provisioner, and a tool runner told "not assigned" waits for
// a prov.changed. The answer says so now; once the plan is there the value
// is answered, and once the assignment is deleted it is "not assigned".
func TestProvAskSaysAModuleAssignedWithoutAPlanIsAssigned(t *testing.T) {
	m := newMesh(t)
	m.put(spec.ConfigBucket, "ace.other.model", "opus")
	m.put(spec.AssignmentsBucket, "ace.other", `{"node":"ace","module":"other","runs":{"unit":"other.service"}}`)
	m.webModule()
	m.client("ace")
	m.waitState("ace", "web", "applied")
	const ask = `{"module":"other","kind":"config","key":"model"}`
	const noPlan = "module other is assigned to node ace without a provisioning plan"
	if r := askFor(t, m, "ace", ask); r["value"] != "" || !contains(r["error"], noPlan) || contains(r["error"], "not assigned") {
		t.Fatalf("assigned without a plan: %v, want an error saying %q", r, noPlan)
	}

	p, tm := oneFile("other", "model = ${config:model}\n")
	m.assign("ace", "other", p, tm)
	m.waitState("ace", "other", "applied")
	if r := askFor(t, m, "ace", ask); r["value"] != "opus" {
		t.Fatalf("with a plan: %v", r)
	}
	m.put(spec.AssignmentsBucket, "ace.other", `{"node":"ace","module":"other"}`)
	bustest.Eventually(t, 30*time.Second, func() error {
		if r := askFor(t, m, "ace", ask); !contains(r["error"], noPlan) {
			return fmt.Errorf("plan taken away: %v", r)
		}
		return nil
	})
	m.del(spec.AssignmentsBucket, "ace.other")
	bustest.Eventually(t, 30*time.Second, func() error {
		if r := askFor(t, m, "ace", ask); r["error"] != "module other is not assigned to node ace" {
			return fmt.Errorf("deleted: %v", r)
		}
		return nil
	})
}

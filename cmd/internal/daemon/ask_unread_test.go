package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// askUntil asks prov.ask.ace body until the error answered holds want.
func askUntil(t *testing.T, m *mesh, body, want string, within time.Duration) {
	t.Helper()
	askUntilOn(t, m.nc, body, want, within)
}

// askUntilOn is askUntil asking on nc (a tool runner's connection: the
// example bus lets the client answer on its tool runner's inbox alone).
func askUntilOn(t *testing.T, nc *nats.Conn, body, want string, within time.Duration) {
	t.Helper()
	var last map[string]string
	bustest.Eventually(t, within, func() error {
		msg, err := nc.Request("prov.ask.ace", []byte(body), 10*time.Second)
		if err != nil {
			return err
		}
		last = nil
		if err := json.Unmarshal(msg.Data, &last); err != nil {
			return fmt.Errorf("reply %q: %w", msg.Data, err)
		}
		if last["error"] != want {
			return fmt.Errorf("%s answered %v, want the error %q", body, last, want)
		}
		return nil
	})
}

// A tool runner asking for a config value the client cannot read (the
// bucket does not exist yet, or the bus does not permit the client to
// read it, SPEC §4.6) is told so, as explain and the report tell the
// operator, not that no such value is resolved. Before, both were answered
// "no config value model is resolved for module web": an operator looking
// for a key mesh-config had not written found it written.
func TestProvAskSaysAConfigBucketItCannotReadIsNotReadable(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		m := newMesh(t)
		if err := m.js.DeleteKeyValue(context.Background(), spec.ConfigBucket); err != nil {
			t.Fatal(err)
		}
		m.assign("ace", "web", webPlan(), webTemplates)
		m.client("ace")
		m.waitState("ace", "web", "waiting")
		askUntil(t, m, `{"module":"web","kind":"config","key":"model"}`,
			"config value model of module web cannot be read: bucket mesh-config_resolved does not exist yet", 10*time.Second)
		// A module not on the node is said so all the same.
		askUntil(t, m, `{"module":"ghost","kind":"config","key":"model"}`, "module ghost is not assigned to node ace", 10*time.Second)
	})
	t.Run("not permitted", func(t *testing.T) {
		m := exampleBus(t)
		m.put(spec.ConfigBucket, "ace.web.model", "opus")
		m.assign("ace", "web", webPlan(), webTemplates)
		m.changeRights("provisioner-ace", "$JS.API.STREAM.INFO.KV_mesh-config_resolved")
		m.client("ace", asUser("provisioner-ace"))
		tr, err := nats.Connect(m.s.ClientURL(), nats.UserInfo("toolrunner-ace", "dev-only-toolrunner-ace"),
			nats.CustomInboxPrefix("_INBOX.toolrunner.ace"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		// The refused lookup ends at the bus's API timeout (5 s).
		askUntilOn(t, tr, `{"module":"web","kind":"config","key":"model"}`,
			"config value model of module web cannot be read: not permitted to read mesh-config_resolved", 30*time.Second)
	})
}

// A client that has never read the assignments bucket (it does not exist
// yet, SPEC §2.2: waited for; or the bus refuses it, §4.6) cannot say
// whether a module is assigned: prov.ask says that, at once, naming why,
// as it says a config bucket it cannot read. It said "the client is busy:
// it is starting … ask again", after 5 s, for as long as the bucket could
// not be read: a tool runner told so asks again forever, and its operator
// looks at a client that started long ago. Once the bucket is read, the
// value is answered (and the start's prov.changed says so).
func TestProvAskSaysAnAssignmentsBucketItNeverReadIsNotReadable(t *testing.T) {
	const ask = `{"module":"web","kind":"config","key":"model"}`
	t.Run("missing", func(t *testing.T) {
		m := newMesh(t)
		if err := m.js.DeleteKeyValue(context.Background(), spec.AssignmentsBucket); err != nil {
			t.Fatal(err)
		}
		m.put(spec.ConfigBucket, "ace.web.model", "opus")
		m.client("ace")
		askUntil(t, m, ask, "whether module web is assigned to node ace cannot be read yet: bucket mesh-controller_assignments does not exist yet", 10*time.Second)
		changed, _ := m.nc.SubscribeSync("prov.changed.ace.web")
		m.nc.Flush()
		m.bucket(spec.AssignmentsBucket)
		m.assign("ace", "web", webPlan(), webTemplates)
		if _, err := changed.NextMsg(30 * time.Second); err != nil {
			t.Fatalf("no prov.changed once the bucket was read: %v", err)
		}
		if r := askFor(t, m, "ace", ask); r["value"] != "opus" {
			t.Fatalf("once read: %v", r)
		}
	})
	t.Run("not permitted", func(t *testing.T) {
		m := exampleBus(t)
		m.put(spec.ConfigBucket, "ace.web.model", "opus")
		m.assign("ace", "web", webPlan(), webTemplates)
		m.changeRights("provisioner-ace", "$JS.API.STREAM.INFO.KV_mesh-controller_assignments")
		m.client("ace", asUser("provisioner-ace"))
		tr, err := nats.Connect(m.s.ClientURL(), nats.UserInfo("toolrunner-ace", "dev-only-toolrunner-ace"),
			nats.CustomInboxPrefix("_INBOX.toolrunner.ace"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tr.Close)
		askUntilOn(t, tr, ask, "whether module web is assigned to node ace cannot be read yet: not permitted to read mesh-controller_assignments", 30*time.Second)
	})
}

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

package vault

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A vault reply out of shape is an Error whose reason says so and how long
// the reply was, never a byte of it: a vault gone wrong may have put the
// value itself there (SPEC §4.2: a value never reaches an error message or
// a log line), and the reason goes to both.
func TestAVaultReplyOutOfShapeIsNotEchoed(t *testing.T) {
	const value = "Zx9-s3cr3t"
	nc := bustest.Connect(t, bustest.Start(t))
	replies := []string{
		value,
		`{"status": "` + value + `"}`,
		`{"status": 73737373}`,
		`{"status": "sealed", "box": 73737373}`,
	}
	next := make(chan string, 1)
	if _, err := nc.Subscribe(spec.VaultGetSubject("ace"), func(m *nats.Msg) { m.Respond([]byte(<-next)) }); err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{NC: nc, Node: "ace", Keys: keys, Timeout: 30 * time.Second}
	for _, reply := range replies {
		next <- reply
		r := c.Ask(context.Background(), "own/app/k", "app")
		if r.Outcome != Error || !strings.Contains(r.Reason, "own/app/k") {
			t.Errorf("reply %d: %s; want an error naming the secret", len(reply), r)
		}
		for _, leak := range []string{value, "'Z'", "737"} {
			if strings.Contains(r.Reason, leak) {
				t.Errorf("reply %d: reason %q shows %q of it", len(reply), r.Reason, leak)
			}
		}
	}
}

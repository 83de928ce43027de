package lab

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// tourAsk is the tour's prov.ask line: the nats CLI's flags and request.
var tourAsk = regexp.MustCompile(`nats -s (\S+) --creds (\S+) --inbox-prefix (\S+) req (prov\.ask\.\S+) '([^']*)'`)

// askAsTheTourSays finds the prov.ask the tour printed in out and makes
// it as the nats CLI would with those flags: only a node's tool runner
// may ask its client, on its own inbox (SPEC §5.4, examples/README). With
// the lab's creds, the one the other hints use, the ask goes unanswered,
// so a tour without this line left a tester trying prov.ask to time out.
func askAsTheTourSays(t *testing.T, out *bustest.Buffer, want string) {
	t.Helper()
	var m []string
	bustest.Eventually(t, 10*time.Second, func() error {
		if m = tourAsk.FindStringSubmatch(out.String()); m == nil {
			return fmt.Errorf("the tour says no prov.ask as a tool runner:\n%s", out.String())
		}
		return nil
	})
	nc, err := nats.Connect(m[1], nats.UserCredentials(m[2]), nats.CustomInboxPrefix(m[3]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	reply, err := nc.Request(m[4], []byte(m[5]), 10*time.Second)
	if err != nil {
		t.Fatalf("the tour's ask %s %s: %v", m[4], m[5], err)
	}
	if got := string(reply.Data); got != `{"value":"`+want+`"}` {
		t.Errorf("the tour's ask was answered %s, want the value %s", got, want)
	}
	if !strings.Contains(m[2], "toolrunner-") {
		t.Errorf("the tour asks as %s, not a tool runner", m[2])
	}
}

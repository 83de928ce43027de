package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// longestLine is the length of the longest line of s.
func longestLine(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, len(l))
	}
	return n
}

// Others' text (a provider's refusal, a vault's reply) is cut before it
// reaches a log line, as it is before a report (DESIGN: "so no log line or
// report carries a megabyte of someone's text").
func TestOthersHugeTextIsCutInLogLines(t *testing.T) {
	m := newMesh(t)
	m.boundConsumer()
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"refused","reason":"`+strings.Repeat("R", 900_000)+`"}`)
	m.put(spec.AssignmentsBucket, "ace.p1", `{"provisioning":{"provides":[{"provision":"x","answered_by":"`+strings.Repeat("A", 900_000)+`"}]}}`)
	m.assign("ace", "vs", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "k", Path: "/etc/vs/k"}}}, nil)
	sub, err := m.nc.Subscribe("mesh-vault.get.>", func(msg *nats.Msg) {
		msg.Respond([]byte(`{"status":"` + strings.Repeat("U", 900_000) + `"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.client("ace")
	m.waitState("ace", "cc", "failed")
	m.waitState("ace", "vs", "waiting")
	m.waitState("ace", "p1", "failed")
	time.Sleep(500 * time.Millisecond)
	m.settle()
	if n := longestLine(m.logs.String()); n > 16<<10 {
		t.Fatalf("a log line of %d bytes: others' text is not cut", n)
	}
}

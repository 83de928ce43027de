package vault

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// replyingVault is a client of node ace, and a vault on a bus of the
// test's own that answers each ask with the next reply sent on next.
func replyingVault(t *testing.T) (*Client, chan<- string) {
	t.Helper()
	nc := bustest.Connect(t, bustest.Start(t))
	next := make(chan string, 1)
	if _, err := nc.Subscribe(spec.VaultGetSubject("ace"), func(m *nats.Msg) { m.Respond([]byte(<-next)) }); err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	return &Client{NC: nc, Node: "ace", Keys: keys, Timeout: 30 * time.Second}, next
}

// A vault reply out of shape is an Error whose reason says so and how long
// the reply was, never a byte of it: a vault gone wrong may have put the
// value itself there (SPEC §4.2: a value never reaches an error message or
// a log line), and the reason goes to both.
func TestAVaultReplyOutOfShapeIsNotEchoed(t *testing.T) {
	const value = "Zx9-s3cr3t"
	c, next := replyingVault(t)
	replies := []string{
		value,
		`{"status": "` + value + `"}`,
		`{"status": 73737373}`,
		`{"status": "sealed", "box": 73737373}`,
	}
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

// The request on the wire is SPEC §4.2's JSON, on
// mesh-vault.get.provisioner.<node>: secret, node, module and public_key
// (base64 of 32 bytes), and credential only in a provisions entry's
// request; vault names carry a provisions entry's local when not empty.
func TestTheVaultRequestIsTheSpecsJSON(t *testing.T) {
	nc := bustest.Connect(t, bustest.Start(t))
	got := make(chan map[string]any, 1)
	if _, err := nc.Subscribe("mesh-vault.get.provisioner.ace", func(m *nats.Msg) {
		var q map[string]any
		if err := json.Unmarshal(m.Data, &q); err != nil {
			t.Errorf("request %q: %v", m.Data, err)
		}
		got <- q
		m.Respond([]byte(`{"status":"absent"}`))
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{NC: nc, Node: "ace", Keys: keys, Timeout: 30 * time.Second}
	for _, a := range []struct{ name, module, credential string }{
		{spec.OwnSecretName("claude-code", "api-key"), "claude-code", ""},
		{spec.ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", ""), "claude-code", "token"},
		{spec.ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", "second"), "claude-code", "ssh-key"},
		{spec.PairSecretName("gitea", "gitea-read", "g14", "web", "second"), "gitea", ""},
	} {
		if r := c.AskCredential(context.Background(), a.name, a.module, a.credential); r.Outcome != Absent {
			t.Fatalf("%s: %s", a.name, r)
		}
		q := <-got
		want := map[string]any{"secret": a.name, "node": "ace", "module": a.module, "public_key": keys.PublicBase64()}
		if a.credential != "" {
			want["credential"] = a.credential
		}
		if !maps.Equal(q, want) {
			t.Errorf("request %v, want %v", q, want)
		}
		if pub, err := base64.StdEncoding.DecodeString(q["public_key"].(string)); err != nil || len(pub) != 32 {
			t.Errorf("public_key %v is not base64 of 32 bytes", q["public_key"])
		}
	}
	for name, want := range map[string]string{
		spec.ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", ""):       "provision/gitea/gitea-read/ace/claude-code",
		spec.ProvisionSecretName("gitea", "gitea-read", "ace", "claude-code", "second"): "provision/gitea/gitea-read/ace/claude-code/second",
		spec.PairSecretName("gitea", "gitea-read", "g14", "web", ""):                    "pair/gitea/gitea-read/g14/web",
		spec.OwnSecretName("claude-code", "api-key"):                                    "own/claude-code/api-key",
	} {
		if name != want {
			t.Errorf("vault name %q, want %q", name, want)
		}
	}
}

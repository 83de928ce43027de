package vault

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// The debug line of each ask says no reason the vault wrote: a refusal's
// or an absence's text may quote a secret ("no such key; the previous one
// <value> was revoked", an outside audit: logged at every backoff ask),
// and what this client holds is not known here.
func TestTheAsksDebugLineSaysNoReasonOfTheVaults(t *testing.T) {
	const value = "SEKRIT-vault-reason-9f1e"
	replies := []string{
		`{"status":"absent","reason":"no such key; the previous one ` + value + ` was revoked"}`,
		`{"status":"refused","reason":"key ` + value + ` has expired"}`,
	}
	c, next := replyingVault(t)
	var log bustest.Buffer
	c.Log = zerolog.New(&log).Level(zerolog.DebugLevel)
	for _, reply := range replies {
		next <- reply
		c.Ask(context.Background(), "own/app/k", "app")
	}
	if n := strings.Count(log.String(), `"message":"vault ask"`); n != len(replies) {
		t.Fatalf("%d debug lines of asks, want %d:\n%s", n, len(replies), log.String())
	}
	if strings.Contains(log.String(), value) {
		t.Errorf("the asks' debug lines quote the vault's reason:\n%s", log.String())
	}
}

package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The vault refuses a secret the client holds with a reason that quotes
// its value ("key <value> has expired"): the reason went to the module's
// report and event, its need, explain and the log (an outside audit).
// It is not said there; that the vault refused it is. Nor at the asks
// after it (the refused-retry): the value is no longer held, but the file
// on disk still holds it (another audit: said from the second refusal on).
func TestAVaultReasonQuotingASecretIsNotSaid(t *testing.T) {
	const planted = "PLANTED-vault-reason-9f3e"
	m := newMesh(t)
	v := m.devVault()
	m.assign("ace", "web", nodes.Plan{
		Files:   []nodes.FileSpec{owned("/etc/web/a.conf", "c", "")},
		Secrets: []nodes.SecretSpec{{Name: "api"}},
	}, map[string]string{"c": "key = ${secret:api}\n"})
	v.Set(t.Context(), "own/web/api", []byte(planted))
	sock := ctlSock(t)
	m.client("ace", withControl(sock), func(c *Config) { c.RefusedRetry = 100 * time.Millisecond })
	m.waitState("ace", "web", "applied")
	// What the client says on the bus; the vault's own reply, which
	// quotes its reason, is the vault's.
	busSaid := bustest.Tap(t, m.nc, func(msg *nats.Msg) bool { return strings.HasPrefix(msg.Subject, "_INBOX.") })

	v.Refuse("own/web/api", "key "+planted+" has expired")
	m.nc.Publish(spec.VaultChangedSubject, []byte(`{"secret":"own/web/api"}`))
	r := m.waitState("ace", "web", "failed")
	if why := fmt.Sprint(r["reason"]); !strings.Contains(why, "vault own/web/api: refused") {
		t.Fatalf("the report's reason %q does not say the vault refused the secret", why)
	}
	time.Sleep(time.Second) // asked again, and refused, several times
	r, _ = m.report("ace", "web")
	_, text := explainOf(t, sock, "web")
	need, _ := m.get(spec.NeedsBucket, spec.EncodeKey("ace", "web", "secret", "api"))
	time.Sleep(200 * time.Millisecond) // the event after the put
	for what, hay := range map[string]string{"report": fmt.Sprint(r), "explain": text, "need": need,
		"log": m.logs.String(), "bus": busSaid()} {
		for _, line := range strings.Split(hay, "\n") {
			if strings.Contains(line, planted) && !strings.Contains(line, `"component":"devvault"`) { // the vault's own log
				t.Errorf("the secret's value is in the %s: %s", what, line)
			}
		}
	}
}

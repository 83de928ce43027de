package daemon

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module holding a secret fails by a provider's refusal (a reason full
// of a terminal's escapes and placeholders), and prov.ask is asked for
// the secret itself: the secret's value shows nowhere — no bucket, event,
// log line (JSON or console), prov.ask answer, control socket answer or
// DOT output — in any of its forms.
func TestASecretShowsNowhereWhenHostilePartiesFailItsModule(t *testing.T) {
	const canary = "LEAK-CANARY-attack-5eed-0042"
	m := newMesh(t)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.assign("ace", "cc", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/cc/k", Template: "k"}, {Path: "/etc/cc/u", Template: "u"}},
		Secrets:    []nodes.SecretSpec{{Name: "api", Path: "/etc/cc/api"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
	}, map[string]string{"k": "k = ${secret:api}\n", "u": "u = ${bound:gitea-read:as} ${secret:api}\n"})
	m.put(spec.ConfigBucket, "ace.cc.api", "not the secret")
	m.rawVault(func(pub *[32]byte) []byte { return sealedTo(pub, canary) })
	m.bucket("gitea_bound")
	entry, _ := json.Marshal(map[string]any{"state": "refused", "reason": evilText + " ${secret:api} " + evilText})
	m.put("gitea_bound", "ace.cc.gitea-read", string(entry))

	busSaid := bustest.Tap(t, m.nc, func(msg *nats.Msg) bool {
		return strings.HasPrefix(msg.Subject, "_INBOX.") && !strings.Contains(string(msg.Data), `"value"`) && !strings.Contains(string(msg.Data), `"error"`) // the vault's own replies
	})
	var console bustest.Buffer
	sock := ctlSock(t)
	m.client("ace", withControl(sock), consoleLog(&console))
	m.waitState("ace", "cc", "failed")
	m.needSays("ace", "cc", "secret", "api", "met", "") // the value is held
	var asks []string
	for _, kind := range []string{"secret", "config"} {
		r, err := m.nc.Request(spec.AskSubject("ace"), []byte(`{"module":"cc","kind":"`+kind+`","key":"api"}`), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		asks = append(asks, string(r.Data))
	}
	m.settle()
	said := busSaid()
	hay := map[string]string{"log": m.logs.String(), "console log": console.String(), "bus": said,
		"asks":    strings.Join(asks, "\n"),
		"explain": unixGet(t, sock, "/v1/explain?module=cc"), "dot": unixGet(t, sock, "/v1/graph.dot"),
		"modules": unixGet(t, sock, "/v1/modules")}
	for k, v := range m.everyBucket(t.Context()) {
		hay[k] = v
	}
	searchLeaks(t, hay, map[string]string{"bus": "prov.applied.ace.cc", "explain": "gitea_bound ace.cc.gitea-read", "dot": "api",
		"asks": "not the secret", "console log": "cc"}, []string{canary}, nil)
}

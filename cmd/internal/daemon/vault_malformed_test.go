package daemon

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/nacl/box"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// rawVault answers every vault request on the bus with what reply makes
// of the request's public key (a vault gone wrong, or one that is not the
// vault), counting the asks.
type rawVault struct {
	mu    sync.Mutex
	reply func(pub *[32]byte) []byte
	asks  int
}

func (m *mesh) rawVault(reply func(pub *[32]byte) []byte) *rawVault {
	m.t.Helper()
	rv := &rawVault{reply: reply}
	sub, err := m.nc.Subscribe("mesh-vault.get.>", func(msg *nats.Msg) {
		var req struct {
			PublicKey string `json:"public_key"`
		}
		json.Unmarshal(msg.Data, &req)
		var pub [32]byte
		b, _ := base64.StdEncoding.DecodeString(req.PublicKey)
		copy(pub[:], b)
		rv.mu.Lock()
		rv.asks++
		f := rv.reply
		rv.mu.Unlock()
		msg.Respond(f(&pub))
	})
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	m.t.Cleanup(func() { sub.Unsubscribe() })
	return rv
}

func (rv *rawVault) set(reply func(pub *[32]byte) []byte) {
	rv.mu.Lock()
	rv.reply = reply
	rv.mu.Unlock()
}

func (rv *rawVault) count() int { rv.mu.Lock(); defer rv.mu.Unlock(); return rv.asks }

func sealedTo(pub *[32]byte, value string) []byte {
	b, err := box.SealAnonymous(nil, []byte(value), pub, rand.Reader)
	if err != nil {
		panic(err)
	}
	j, _ := json.Marshal(map[string]string{"status": "sealed", "box": base64.StdEncoding.EncodeToString(b)})
	return j
}

// A reply out of shape (not JSON, a box that is not base64, a box sealed
// to another key, a status that is no status) leaves the module waiting
// with why saying what was wrong, never the reply's bytes (the canary
// each carries), and is asked again with backoff: a vault that then
// answers right fills the file (SPEC §4.2).
func TestAVaultReplyOutOfShapeWaitsSaysWhyAndIsAskedAgain(t *testing.T) {
	const canary = "LEAK-CANARY-c0ffee"
	other, _, _ := box.GenerateKey(rand.Reader)
	cases := []struct {
		name  string
		reply func(pub *[32]byte) []byte
		says  string
	}{
		{"not JSON", func(*[32]byte) []byte { return []byte(canary + "{") }, "is not JSON"},
		{"box not base64", func(*[32]byte) []byte {
			return []byte(`{"status":"sealed","box":"` + canary + `!!"}`)
		}, "not base64"},
		{"box for another key", func(*[32]byte) []byte { return sealedTo(other, canary) }, "does not open"},
		{"box too short", func(*[32]byte) []byte {
			return []byte(`{"status":"sealed","box":"` + base64.StdEncoding.EncodeToString([]byte("LEAK")) + `"}`)
		}, "shorter than a sealed box"},
		{"unknown status", func(*[32]byte) []byte { return []byte(`{"status":"` + canary + `"}`) }, "not sealed, absent or refused"},
		{"status not a string", func(*[32]byte) []byte { return []byte(`{"status":["` + canary + `"]}`) }, "is not {"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMesh(t)
			m.assign("ace", "vs", nodes.Plan{
				Files:   []nodes.FileSpec{{Path: "/etc/vs/conf", Template: "conf"}},
				Secrets: []nodes.SecretSpec{{Name: "k", Path: "/etc/vs/k"}},
			}, map[string]string{"conf": "k = ${secret:k}\n"})
			rv := m.rawVault(c.reply)
			busSaid := bustest.Tap(t, m.nc, func(msg *nats.Msg) bool {
				return strings.HasPrefix(msg.Subject, "_INBOX.") // the vault's replies themselves
			})
			sock := ctlSock(t)
			m.client("ace", withControl(sock))
			m.waitWaiting("ace", "vs", `"name":"k"`, "own/vs/k", c.says)
			m.needSays("ace", "vs", "secret", "k", "waiting", c.says)
			n := rv.count()
			bustest.Eventually(t, 5*time.Second, func() error {
				if rv.count() < n+2 {
					return fmt.Errorf("asked %d times since, want it asked again with backoff", rv.count()-n)
				}
				return nil
			})
			said := busSaid()
			hay := map[string]string{"log": m.logs.String(), "bus": said,
				"explain": unixGet(t, sock, "/v1/explain?module=vs"), "dot": unixGet(t, sock, "/v1/graph.dot"),
				"modules": unixGet(t, sock, "/v1/modules")}
			for k, v := range m.everyBucket(t.Context()) {
				hay[k] = v
			}
			searchLeaks(t, hay, map[string]string{"bus": "prov.applied.ace.vs", "explain": "own/vs/k",
				"bucket " + spec.NeedsBucket: "ace.vs.secret.k", "log": "own/vs/k"}, []string{canary}, nil)
			rv.set(func(pub *[32]byte) []byte { return sealedTo(pub, "good") })
			m.waitFile("/etc/vs/k", "good")
			m.waitFile("/etc/vs/conf", "k = good\n")
			m.waitState("ace", "vs", "applied")
		})
	}
}

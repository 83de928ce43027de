package daemon

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/nacl/box"
)

// A consumer's credential that is not UTF-8 text cannot be carried by the
// consumers list's JSON string: it is left out and logged, never listed
// with its bytes turned into U+FFFD (a credential that is not the
// consumer's).
func TestAConsumersCredentialThatIsNotUTF8IsLeftOutNotMangled(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	m.assign("g14", "bin", consumerPlan(), nil)
	sub, err := m.nc.Subscribe("mesh-vault.get.>", func(msg *nats.Msg) {
		var r struct {
			Secret    string `json:"secret"`
			PublicKey string `json:"public_key"`
		}
		json.Unmarshal(msg.Data, &r)
		k, _ := base64.StdEncoding.DecodeString(r.PublicKey)
		var pub [32]byte
		copy(pub[:], k)
		val := "text"
		if strings.HasSuffix(r.Secret, "/bin") {
			val = "a\xff\xfeb"
		}
		sealed, _ := box.SealAnonymous(nil, []byte(val), &pub, rand.Reader)
		msg.Respond([]byte(`{"status":"sealed","box":"` + base64.StdEncoding.EncodeToString(sealed) + `"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	m.client("ace")
	list := m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", ""))
	if list[0].Value != "text" {
		t.Fatalf("consumers %v", list)
	}
	m.settle()
	if !strings.Contains(m.logs.String(), `"secret":"`+pair("g14", "bin", "")+`"`) {
		t.Fatal("the consumer left out is not said in the log")
	}
}

package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A value naming "provisioning" twice, or once more but for case, the
// last a null, is a plan to a reader that takes the first (and to one
// that reads every name) and none to encoding/json, which takes the last.
// Taken as "no plan" the module left the node silently: its report
// removed, its owned files removed by the node-engine. It fails instead,
// the reason naming the field, its files left as they are (SPEC §3: a plan
// that breaks a rule fails that module; the other modules are untouched).
func TestAPlanGivenTwiceTheLastANullFailsAndLosesNoFile(t *testing.T) {
	for _, second := range []string{"provisioning", "Provisioning"} {
		t.Run(second, func(t *testing.T) {
			m := newMesh(t)
			m.webModule()
			m.client("ace")
			m.waitFile("/etc/web/b.conf", "state = /var/lib/web\n")
			m.waitState("ace", "web", "applied")

			p := webPlan()
			p.Templates.Ref, p.Templates.Digest = m.archive("ace-web", webTemplates)
			b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "web", Provisioning: p})
			twice := strings.TrimSuffix(string(b), "}") + fmt.Sprintf(`,%q:null}`, second)
			m.put(spec.AssignmentsBucket, "ace.web", twice)
			r := m.waitState("ace", "web", "failed")
			if why := fmt.Sprint(r["reason"]); !contains(why, `"`+second+`"`) {
				t.Errorf("reason %q does not name the field %q", why, second)
			}
			m.settle()
			time.Sleep(200 * time.Millisecond)
			if got, _, err := m.file("/etc/web/b.conf"); err != nil || got != "state = /var/lib/web\n" {
				t.Errorf("/etc/web/b.conf is %q (%v), want it left as it was", got, err)
			}
		})
	}
}

// The same value, a consumer's plan on another node, is no unbinding: the
// provider's consumers file keeps the consumer as its last plan bound it
// (as for a plan that does not parse), and the provider is not filled
// again.
func TestAConsumersPlanGivenTwiceTheLastANullKeepsItsBinding(t *testing.T) {
	m := newMesh(t)
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte("p1"))
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "cc", consumerPlan(), nil)
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", ""))
	m.waitState("ace", "gitea", "applied")
	m.settle()
	from := m.fills.count()

	good, _ := m.get(spec.AssignmentsBucket, "g14.cc")
	m.put(spec.AssignmentsBucket, "g14.cc", strings.TrimSuffix(good, "}")+`,"provisioning":null}`)
	m.settle()
	time.Sleep(200 * time.Millisecond)
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", ""))
	for _, r := range m.fills.requests("gitea", from) {
		t.Errorf("the provider was filled again: %v", r.Files)
	}
}

// A provider's plan given so, on another node or on the consumer's own,
// is no plan taken away: its consumers are judged by its last offers and
// stay applied, their files as they were.
func TestAProvidersPlanGivenTwiceTheLastANullKeepsItsOffers(t *testing.T) {
	for _, node := range []string{"novox", "ace"} {
		t.Run(node, func(t *testing.T) {
			m := newMesh(t)
			m.bucket("gitea_bound")
			m.boundConsumer() // gitea on novox, cc on ace
			if node == "ace" {
				m.del(spec.AssignmentsBucket, "novox.gitea")
				m.provider("ace", "gitea", nodes.Offer{Provision: "gitea-read"})
			}
			m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"u","url":"h"}}`)
			m.client("ace")
			m.waitFile("/etc/cc/forge.toml", "user = u\nurl = h\n")
			m.waitState("ace", "cc", "applied")
			m.settle()

			key := node + ".gitea"
			good, _ := m.get(spec.AssignmentsBucket, key)
			m.put(spec.AssignmentsBucket, key, strings.TrimSuffix(good, "}")+`,"provisioning":null}`)
			if node == "ace" {
				m.waitState("ace", "gitea", "failed")
			}
			m.settle()
			time.Sleep(300 * time.Millisecond)
			if r, _ := m.report("ace", "cc"); r["state"] != "applied" {
				t.Errorf("the consumer's report %v, want it applied still", r)
			}
		})
	}
}

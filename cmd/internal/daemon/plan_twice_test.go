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

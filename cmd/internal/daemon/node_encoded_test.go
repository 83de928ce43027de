package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A --node given as the key token it stands as (a=2Eb, as an operator
// reads it off the bucket's keys) names another node: SPEC §2.1 encodes
// its '=' again (a=3D2Eb), so the client found no module and said nothing
// of why. It runs as given and warns at start, naming the node whose
// token it is; a name that merely needs encoding (a.b) is said with its
// token on the starting line, and warned of by nothing.
func TestANodeGivenAsItsKeyTokenIsWarnedOfAtStart(t *testing.T) {
	m := newMesh(t)
	m.assign("a.b", "web", webPlan(), webTemplates) // at a=2Eb.web
	m.client("a=2Eb")
	m.client("a.b")
	m.waitState("a.b", "web", "waiting") // its config values are not written
	bustest.Eventually(t, 5*time.Second, func() error {
		var warned, said bool
		for _, line := range strings.Split(m.logs.String(), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(line), &l) != nil {
				continue
			}
			msg := fmt.Sprint(l["message"])
			switch l["node"] {
			case "a=2Eb":
				if l["level"] == "warn" && strings.Contains(msg, `"a.b"`) && strings.Contains(msg, "a=3D2Eb") {
					warned = true
				}
			case "a.b":
				if l["level"] == "warn" && strings.Contains(msg, "token") {
					return fmt.Errorf("node a.b warned of: %s", line)
				}
				if msg == "starting" && l["node_token"] == "a=2Eb" {
					said = true
				}
			}
		}
		if !warned || !said {
			return fmt.Errorf("warned %v, token said %v:\n%s", warned, said, m.logs.String())
		}
		return nil
	})
}

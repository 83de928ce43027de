package daemon

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// /v1/modules says of each module what its report says: the state, the
// reason of a failed one, and what a waiting one waits for (kind, name,
// why), with since no later than the report's "at" of that state.
func TestModulesSaysWhatTheReportSays(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill("/etc/web/**", "/etc/w2/**")
	m.webModule()
	p, tm := oneFile("cfg", "flavour = ${config:flavour}\n")
	m.put(spec.ConfigBucket, "ace.cfg.flavour", "x")
	m.assign("ace", "cfg", p, tm) // refused by the fill socket: failed
	p, tm = oneFile("w2", "a = ${config:flavour} ${config:other}\n")
	m.assign("ace", "w2", p, tm) // waits for two values
	sock := ctlSock(t)
	m.client("ace", withControl(sock), f.socket)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "cfg", "failed")
	m.waitWaiting("ace", "w2", "ace.w2.flavour", "ace.w2.other")

	bustest.Eventually(t, 10*time.Second, func() error {
		_, b := ctlGet(t, sock, "/v1/modules")
		var ms struct {
			Modules []struct {
				control.ModuleStatus
				Waiting []map[string]any `json:"waiting"`
			} `json:"modules"`
		}
		if err := json.Unmarshal(b, &ms); err != nil || len(ms.Modules) != 3 {
			return fmt.Errorf("%v %s", err, b)
		}
		for _, s := range ms.Modules {
			r, _ := m.report("ace", s.Module)
			at, _ := time.Parse(time.RFC3339, fmt.Sprint(r["at"]))
			reason, _ := r["reason"].(string)
			waiting := []map[string]any{} // the report's [] is /v1/modules' []
			if w, ok := r["waiting"].([]any); ok {
				for _, x := range w {
					waiting = append(waiting, x.(map[string]any))
				}
			}
			if s.State != r["state"] || (s.State == "failed" && s.Reason != reason) ||
				!reflect.DeepEqual(s.Waiting, waiting) || s.Since.IsZero() || s.Since.After(at.Add(time.Second)) {
				return fmt.Errorf("/v1/modules says of %s %+v waiting %v; its report %v", s.Module, s.ModuleStatus, s.Waiting, r)
			}
		}
		return nil
	})
}

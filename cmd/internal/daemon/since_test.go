package daemon

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// statusOf is module's line of /v1/modules (what `status` prints).
func statusOf(t *testing.T, sock, module string) control.ModuleStatus {
	t.Helper()
	s, err := statusTry(sock, module)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func statusTry(sock, module string) (control.ModuleStatus, error) {
	_, b, err := ctlTry(sock, "/v1/modules")
	if err != nil {
		return control.ModuleStatus{}, err
	}
	var ms control.Modules
	if err := json.Unmarshal(b, &ms); err != nil {
		return control.ModuleStatus{}, fmt.Errorf("%v\n%s", err, b)
	}
	for _, s := range ms.Modules {
		if s.Module == module {
			return s, nil
		}
	}
	return control.ModuleStatus{}, fmt.Errorf("%s is not in %s", module, b)
}

// A module failed for its plan, then by the fill (its plan fixed, the
// node-engine not answering), is said failed by the fill since the fill
// began failing, in explain's fill line and in status: the report in the
// bucket was written again then, with the fill's reason. Before, both
// said the fill failed since the plan did (the module's first failed
// report), a time before the fill was ever tried.
func TestAFillFailureIsSaidSinceTheFillBeganFailingNotSinceThePlanFailed(t *testing.T) {
	m := newMesh(t)
	sock := ctlSock(t)
	nowhere := filepath.Join(filepath.Dir(sock), "nowhere.sock")
	m.client("ace", withControl(sock), func(c *Config) { c.FillSocket = nowhere })
	// One archive for both plans: the module does not wait for it between.
	p, tmpl := oneFile("down", "x\n")
	p.Templates.Ref, p.Templates.Digest = m.archive("ace-down", tmpl)
	bad := p
	bad.Files = []nodes.FileSpec{{Path: "/etc/down/a.conf", Template: "nope"}}
	assign := func(p nodes.Plan) {
		b, _ := json.Marshal(nodes.Assignment{Node: "ace", Module: "down", Provisioning: p})
		m.put(spec.AssignmentsBucket, "ace.down", string(b))
	}
	assign(bad)
	m.waitFailed("ace", "down", "nope")
	planFailed := statusOf(t, sock, "down").Since
	fixed := time.Now()
	if !planFailed.Before(fixed) {
		t.Fatalf("the plan's failure is said since %v, not before %v", planFailed, fixed)
	}

	assign(p)
	m.waitFailed("ace", "down", "not answering")
	var e *control.Explanation
	bustest.Eventually(t, 30*time.Second, func() error {
		var err error
		if e, _, err = explainTry(sock, "down"); err != nil {
			return err
		}
		if e.Fill == nil {
			return fmt.Errorf("no fill failure said: %+v", e)
		}
		return nil
	})
	if e.Fill.Since.Before(fixed) {
		t.Errorf("explain says the fill failed since %v, before its plan was fixed (%v) and the fill tried", e.Fill.Since, fixed)
	}
	if s := statusOf(t, sock, "down"); s.State != "failed" || s.Since.Before(fixed) {
		t.Errorf("status says %s since %v (%s), want failed since the fill began failing, after %v", s.State, s.Since, s.Reason, fixed)
	}

	// Failing again the same way at each tick: still since it began.
	began := e.Fill.Since
	m.settle()
	if e, _ = explainOf(t, sock, "down"); e.Fill == nil || !e.Fill.Since.Equal(began) {
		t.Errorf("the same fill failure, tried again, is said since %+v, want %v", e.Fill, began)
	}
}

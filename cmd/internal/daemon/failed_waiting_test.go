package daemon

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A module that fails (its bound entry refused) while another of its
// placeholders still waits (a config key not resolved yet) says both: its
// failed report, in the applied bucket and on prov.applied alike, gives
// the provider's reason and lists in "waiting" what else it waits for
// (SPEC §5.3's report carries both), so an operator who fixes the refusal
// knows the module will still wait. The failed need itself is in the
// reason, not the list. Before, a failed report listed nothing waiting.
func TestAFailedReportListsWhatElseTheModuleWaitsFor(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"refused","reason":"gitea does not serve gitea-read to cc"}`)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.urlConsumer("url = ${bound:gitea-read:url}\nmodel = ${config:model}\n")
	events, err := m.nc.SubscribeSync(spec.AppliedSubject("ace", "cc"))
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))

	type report struct {
		State, Reason string
		Waiting       []struct{ Kind, Name, Why string }
	}
	check := func(where string, b []byte) error {
		var r report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if r.State != "failed" || !contains(r.Reason, "gitea does not serve gitea-read to cc") {
			return fmt.Errorf("%s is not failed with the provider's reason: %s", where, b)
		}
		if len(r.Waiting) != 1 || r.Waiting[0].Kind != "config" || r.Waiting[0].Name != "model" ||
			!contains(r.Waiting[0].Why, "ace.cc.model") {
			return fmt.Errorf("%s does not list the config key it still waits for (and it alone): %s", where, b)
		}
		return nil
	}
	bustest.Eventually(t, 10*time.Second, func() error {
		v, _ := m.get(spec.AppliedBucket, "ace.cc")
		return check("the report", []byte(v))
	})
	var last *nats.Msg
	for {
		msg, err := events.NextMsg(time.Second)
		if err != nil {
			break
		}
		last = msg
	}
	if last == nil {
		t.Fatal("no prov.applied event of cc")
	}
	if err := check("the last event", last.Data); err != nil {
		t.Fatal(err)
	}
	if v, _ := m.get(spec.AppliedBucket, "ace.cc"); v != string(last.Data) {
		t.Errorf("the report and its event differ:\n%s\n%s", v, last.Data)
	}
	// /v1/modules says what else it waits for, as the report does.
	_, b := ctlGet(t, sock, "/v1/modules")
	var ms struct {
		Modules []struct {
			Module string
			report
		} `json:"modules"`
	}
	if err := json.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	for _, x := range ms.Modules {
		if x.Module == "cc" {
			if x.State != "failed" || len(x.Waiting) != 1 || x.Waiting[0].Kind != "config" || x.Waiting[0].Name != "model" {
				t.Errorf("/v1/modules says of cc: %s", b)
			}
			return
		}
	}
	t.Errorf("/v1/modules does not list cc: %s", b)
}

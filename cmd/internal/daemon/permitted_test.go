package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// exampleBus is a mesh on a server run with examples/nats/server.conf, the
// test connecting as its user lab.
func exampleBus(t *testing.T) *mesh {
	t.Helper()
	file := authtest.ConfigOptions(t, "../../../examples/nats/server.conf") // one store for each restart
	return newMeshOn(t, func(o *server.Options) { *o = *file }, "lab")
}

func asUser(user string) clientOpt {
	return func(c *Config) { c.Bus.User, c.Bus.Password = user, "dev-only-"+user }
}

// SPEC §4.6: a provider bucket the client's account may not read (the
// example config gives provisioner-ace gitea_bound, not route-proxy_bound)
// is said in the report, the needs bucket and explain, not "not written
// yet"; the bucket the account may read is bound as ever.
func TestABucketTheClientMayNotReadIsSaid(t *testing.T) {
	m := exampleBus(t)
	m.bucket("gitea_bound")
	m.bucket("route-proxy_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge"}}`)
	m.put("route-proxy_bound", "ace.rp.route", `{"state":"bound","values":{"url":"https://route"}}`)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.provider("novox", "route-proxy", nodes.Offer{Provision: "route"})
	m.urlConsumer("${bound:gitea-read:url}\n")
	m.assign("ace", "rp", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/rp/route", Template: "route"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "route", Provider: "route-proxy", Credential: "token"}},
	}, map[string]string{"route": "${bound:route:url}\n"})
	sock := ctlSock(t)
	m.client("ace", asUser("provisioner-ace"), withControl(sock))

	m.waitFile("/etc/cc/forge", "https://forge\n")
	const why = "not permitted to read route-proxy_bound"
	// The refused lookup ends at the bus's API timeout (5 s).
	bustest.Eventually(m.t, 20*time.Second, func() error {
		r, _ := m.report("ace", "rp")
		b, _ := json.Marshal(r)
		if r["state"] != "waiting" || !strings.Contains(string(b), why) {
			return fmt.Errorf("report %s", b)
		}
		return nil
	})
	if strings.Contains(fmt.Sprint(m.report("ace", "rp")), "not written yet") {
		t.Fatal("the report says a refused bucket's entry is not written yet")
	}
	m.needSays("ace", "rp", "bound", "route:url", "waiting", why)
	var need struct{ Why string }
	v, _ := m.get(spec.NeedsBucket, spec.EncodeKey("ace", "rp", "bound", "route:url"))
	if json.Unmarshal([]byte(v), &need); need.Why != why {
		t.Fatalf("the need's why is %q, want SPEC §4.6's %q", need.Why, why)
	}
	_, text := explainOf(t, sock, "rp")
	if !strings.Contains(text, "route-proxy_bound ace.rp.route: "+why) {
		t.Fatalf("explain does not say the bucket is not permitted:\n%s", text)
	}
	if _, _, err := m.file("/etc/rp/route"); err == nil {
		t.Fatal("a file was written from a bucket the client may not read")
	}
	m.waitState("ace", "cc", "applied")
	if v, _ := m.get(spec.NeedsBucket, spec.EncodeKey("ace", "cc", "bound", "gitea-read:url")); !strings.Contains(v, `"met"`) {
		t.Fatalf("the permitted binding's need: %s", v)
	}
}

// A report's prov.applied event follows its put's ack (report.PutReports),
// taken on a reply subject under the connection's own inbox prefix: the
// only one the example config lets provisioner-ace receive on. An ack it
// may not receive would leave the report unsaid and retried for ever.
func TestAReportsEventGoesOutUnderTheExamplePermissions(t *testing.T) {
	m := exampleBus(t)
	sub, err := m.nc.SubscribeSync("prov.applied.ace.web")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/web/conf", Template: "conf"}}},
		map[string]string{"conf": "port 80\n"})
	m.client("ace", asUser("provisioner-ace"))
	m.waitFile("/etc/web/conf", "port 80\n")
	// Within the publisher's ackWait (10 s): a lost ack would say nothing.
	deadline := time.Now().Add(8 * time.Second)
	var msg *nats.Msg
	for {
		var err error
		if msg, err = sub.NextMsg(time.Until(deadline)); err != nil {
			t.Fatalf("no prov.applied event saying applied: %v\n%s", err, m.logs.String())
		}
		var r struct{ State string }
		if json.Unmarshal(msg.Data, &r); r.State == "applied" {
			break
		}
	}
	if v, _ := m.get(spec.AppliedBucket, spec.EncodeKey("ace", "web")); v != string(msg.Data) {
		t.Errorf("the event says %s, the bucket %s", msg.Data, v)
	}
	if strings.Contains(m.logs.String(), "report not written") {
		t.Errorf("log: %s", m.logs.String())
	}
}

// A watch whose consumer the bus lost under a live connection (a server of
// a cluster restarted; here deleted) is made again by the watch's own look
// (inputs/bus lost.go), which asks for the newest value under the node's
// filter: a request the node's rights in the example config allow. The
// value written meanwhile reaches the file within a look and a Recheck
// (Recheck 100 ms here), not the consumer's heartbeats.
func TestAWatchLostUnderTheExamplePermissionsIsMadeAgain(t *testing.T) {
	m := exampleBus(t)
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge"}}`)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.urlConsumer("${bound:gitea-read:url}\n")
	m.client("ace", asUser("provisioner-ace"))
	m.waitFile("/etc/cc/forge", "https://forge\n")

	stream, err := m.js.Stream(t.Context(), "KV_gitea_bound")
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for ci := range stream.ListConsumers(t.Context()).Info() {
		if err := stream.DeleteConsumer(t.Context(), ci.Name); err != nil {
			t.Fatal(err)
		}
		lost++
	}
	if lost != 1 {
		t.Fatalf("%d consumers on the bound bucket, want the client's one", lost)
	}
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"url":"https://forge2"}}`)
	m.waitFile("/etc/cc/forge", "https://forge2\n")
	if s := m.logs.String(); !strings.Contains(s, "consumer was lost") || strings.Contains(s, "Permissions Violation") {
		t.Errorf("log: %s", s)
	}
}

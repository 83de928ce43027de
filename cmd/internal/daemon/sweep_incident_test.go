package daemon

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	srv "github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// The seed's incident of 2026-10-30, end to end (SPEC §6.2 r2): gitea's
// helper refuses every bind of gitea-read on two nodes, and route-proxy
// keeps its entries in a bucket the nodes may not read. The sweep, over
// what the real clients recorded, names gitea failed once with both
// modules it holds back, and route-proxy's need stood asked with why the
// client could not read it.
func TestTheSweepNamesWhoHoldsTheMeshBack(t *testing.T) {
	m := exampleBus(t)
	m.bucket("gitea_bound")
	m.bucket("route-proxy_bound")
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read", AnsweredBy: "helper"})
	m.provider("novox", "route-proxy", nodes.Offer{Provision: "route"})
	for _, node := range []string{"ace", "g14"} {
		m.assign(node, "cc", nodes.Plan{
			Files:      []nodes.FileSpec{{Path: "/etc/cc-" + node + "/forge", Template: "forge"}},
			Provisions: []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}},
		}, map[string]string{"forge": "${bound:gitea-read:url}\n"})
		m.put("gitea_bound", node+".cc.gitea-read", `{"state":"refused","reason":"gitea does not serve gitea-read"}`)
	}
	m.assign("ace", "rp", nodes.Plan{
		Files:      []nodes.FileSpec{{Path: "/etc/rp/route", Template: "route"}},
		Provisions: []nodes.ProvisionSpec{{Provision: "route", Provider: "route-proxy", Credential: "token"}},
	}, map[string]string{"route": "${bound:route:url}\n"})
	m.put("route-proxy_bound", "ace.rp.route", `{"state":"bound","values":{"url":"https://route"}}`)
	m.client("ace", asUser("provisioner-ace"))
	m.client("g14", asUser("provisioner-g14"))

	stop, err := srv.ServeQuery(context.Background(), m.nc, m.js, zerolog.New(m.logs))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := m.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	const notPermitted = "not permitted to read route-proxy_bound"
	var reply srv.SweepReply
	// The refused bucket is known at the bus's API timeout (5 s); the
	// need then waits, and stands asked a second later.
	bustest.Eventually(m.t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := srv.AskSweep(ctx, m.nc, "", "", "1s")
		if err != nil {
			return err
		}
		reply = r
		if len(r.Findings) < 2 || r.Findings[0].Verdict != srv.VerdictFailed || r.Findings[1].Verdict != srv.VerdictStoodAsked ||
			!strings.Contains(r.Findings[1].Why, notPermitted) {
			return fmt.Errorf("findings %+v", r.Findings)
		}
		return nil
	})
	failed := reply.Findings[0]
	if failed.Owner != "gitea" || failed.Kind != "bound" || failed.Name != "gitea-read:url" ||
		!strings.Contains(failed.Why, "gitea does not serve gitea-read") || failed.Count != 2 ||
		fmt.Sprint(failed.Needs) != "[{ace cc} {g14 cc}]" {
		t.Errorf("the failed finding: %+v", failed)
	}
	for _, f := range reply.Findings[1:] {
		if f.Verdict == srv.VerdictFailed {
			t.Errorf("gitea's refusals are more than one finding: %+v", f)
		}
	}
	stood := reply.Findings[1]
	if stood.Owner != "route-proxy" || stood.Kind != "bound" || stood.Name != "route:url" ||
		!strings.Contains(stood.Why, notPermitted) || fmt.Sprint(stood.Needs) != "[{ace rp}]" {
		t.Errorf("the stood-asked finding: %+v", stood)
	}
	if !reply.Held() {
		t.Error("the sweep says nothing holds the mesh back")
	}
}

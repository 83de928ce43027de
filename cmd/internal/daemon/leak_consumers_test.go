package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// A consumers list (SPEC §4.5) carries consumers' credentials: one
// holding JSON's quotes and braces, "${" and a line break, one that is not
// UTF-8 text (left out), one the vault refuses (left out), put in an owned
// file, a managed-keys line and a managed block another module shares.
// No credential shows in a bucket, an event, the client's or mesh-fill's
// log, mesh-fill's state directory, the control socket or the verb, and
// every report's digest of the three files is keyed.
func TestAConsumersListsCredentialsShowNowhere(t *testing.T) {
	const (
		listed  = "LEAK-CANARY-c0n5-0001\"},{\"consumer\":\"evil\",\"value\":\"${secret:x}\n"
		binary  = "LEAK-CANARY-c0n5-0002\xff\xfe"
		refused = "LEAK-CANARY-c0n5-0003"
	)
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "gitea", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/gitea/consumers.json", Template: "c"},
			{Path: "/etc/gitea/env", Template: "k", Form: nodes.FormManagedKeys},
			{Path: "/etc/gitea/shared.conf", Template: "b", Form: nodes.FormManagedBlock}},
		Provides: []nodes.Offer{{Provision: "gitea-read"}},
	}, map[string]string{"c": "${consumers:gitea-read}", "k": "CONSUMERS=${consumers:gitea-read}\n",
		"b": "consumers = ${consumers:gitea-read}\n"})
	m.assign("ace", "other", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/gitea/shared.conf", Template: "b", Form: nodes.FormManagedBlock}},
	}, map[string]string{"b": "plain = 1\n"})
	for _, mod := range []string{"cc", "bin", "no"} {
		m.assign("g14", mod, consumerPlan(), nil)
	}
	v := m.devVault()
	v.Set(t.Context(), pair("g14", "cc", ""), []byte(listed))
	v.Set(t.Context(), pair("g14", "bin", ""), []byte(binary))
	v.Set(t.Context(), pair("g14", "no", ""), []byte(refused))
	v.Refuse(pair("g14", "no", ""), "not for you")
	busSaid := bustest.Tap(t, m.nc, nil)
	sock := ctlSock(t)
	m.client("ace", f.socket, withControl(sock))
	if list := m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "cc", "")); list[0].Value != listed {
		t.Fatalf("the listed credential is %q", list[0].Value)
	}
	m.waitContains("/etc/gitea/env", "CONSUMERS=[{", true)
	m.waitContains("/etc/gitea/shared.conf", "plain = 1", true)
	m.waitState("ace", "gitea", "applied")
	m.waitState("ace", "other", "applied")
	m.settle()

	var oracles []string
	for _, p := range []string{"/etc/gitea/consumers.json", "/etc/gitea/env", "/etc/gitea/shared.conf"} {
		text, _, err := m.file(p)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(text))
		oracles = append(oracles, hex.EncodeToString(sum[:]))
	}
	for _, mod := range []string{"gitea", "other"} {
		r, _ := m.report("ace", mod)
		for p, d := range reportDigests(r) {
			if !strings.HasPrefix(d, "hmac-sha256:") {
				t.Errorf("%s's report says digest %q of %s, which holds credentials", mod, d, p)
			}
		}
	}
	hay := map[string]string{"client log": m.logs.String(), "mesh-fill log": f.log.String(),
		"mesh-fill state dir": stateDirText(t, f.state)}
	for _, p := range []string{"/v1/modules", "/v1/explain?module=gitea", "/v1/graph.dot", "/metrics"} {
		hay["control "+p] = unixGet(t, sock, p)
	}
	for _, what := range []string{"sweep", "needs", "applied"} {
		hay["verb "+what] = m.query(what)
	}
	for k, s := range m.everyBucket(t.Context()) {
		hay[k] = s
	}
	hay["bus"] = busSaid()
	searchLeaks(t, hay, map[string]string{"client log": pair("g14", "bin", ""), "mesh-fill state dir": "CONSUMERS",
		"control /v1/graph.dot": pair("g14", "no", ""), "bus": "prov.applied.ace.gitea"},
		[]string{listed, binary, refused, "LEAK-CANARY-c0n5-0001", "LEAK-CANARY-c0n5-0002"}, oracles)
}

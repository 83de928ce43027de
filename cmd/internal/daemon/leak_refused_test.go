package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// The real mesh-fill refusing requests that carry a secret (a managed
// block whose secret holds a block marker line: 400; a secret's path
// outside --allow: 403; a secret's path below a regular file, which no
// write can make: 500), and secrets whose values are not UTF-8 text or
// hold "}", "${" and line breaks, written: the client's report says the
// status and the paths, never the node-engine's text, and no value shows
// in a bucket, an event, the client's log or mesh-fill's (debug
// included), mesh-fill's state directory, the control socket or the
// server's verb.
func TestASecretInARefusedOrOddFillShowsNowhere(t *testing.T) {
	const (
		marker = "LEAK-CANARY-b10c-0001\n# END mesh mb\nLEAK-CANARY-b10c-0002"
		denied = "LEAK-CANARY-a110-0003"
		broken = "LEAK-CANARY-b0ke-0004"
		odd    = "LEAK-CANARY-0dd\xff\xfe}${secret:tok}\n$${x}\r\nline 2"
	)
	m := newMesh(t)
	f := m.stateFill("/etc/**")
	m.assign("ace", "mb", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/mb.conf", Template: "t", Form: nodes.FormManagedBlock}},
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
	}, map[string]string{"t": "a = 1\nb = ${secret:tok}\n"})
	m.assign("ace", "deny", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/srv/deny/tok"}}}, nil)
	m.assign("ace", "broken", nodes.Plan{Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/etc/blocker/tok"}}}, nil)
	m.assign("ace", "odd", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/odd/conf", Template: "t"}},
		Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/etc/odd/tok"}},
	}, map[string]string{"t": "v=${secret:tok}\n"})
	if err := os.MkdirAll(filepath.Join(m.root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.root, "etc/blocker"), []byte("a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := m.devVault()
	for mod, value := range map[string]string{"mb": marker, "deny": denied, "broken": broken, "odd": odd} {
		v.Set(t.Context(), "own/"+mod+"/tok", []byte(value))
	}
	busSaid := bustest.Tap(t, m.nc, nil)
	sock := ctlSock(t)
	m.client("ace", f.socket, withControl(sock))
	m.waitFile("/etc/odd/tok", odd)
	m.waitFile("/etc/odd/conf", "v="+odd+"\n")
	m.waitState("ace", "odd", "applied")
	for mod, want := range map[string][]string{"mb": {"400", "withheld", "/etc/mb.conf"},
		"deny": {"403", "withheld", "/srv/deny/tok"}, "broken": {"withheld", "/etc/blocker/tok"}} {
		r := m.waitState("ace", mod, "failed")
		if why := fmt.Sprint(r["reason"]); !containsAll(why, want) {
			t.Errorf("%s's reason %q does not say %q", mod, why, want)
		}
	}
	m.settle()

	hay := map[string]string{"client log": m.logs.String(), "mesh-fill log": f.log.String(),
		"mesh-fill state dir": stateDirText(t, f.state)}
	for _, p := range []string{"/v1/modules", "/v1/explain?module=mb", "/v1/explain?module=deny",
		"/v1/explain?module=broken", "/v1/explain?module=odd", "/v1/graph.dot", "/metrics"} {
		hay["control "+p] = unixGet(t, sock, p)
	}
	for _, what := range []string{"sweep", "needs", "applied"} {
		hay["verb "+what] = m.query(what)
	}
	for k, s := range m.everyBucket(t.Context()) {
		hay[k] = s
	}
	hay["bus"] = busSaid()
	canaries := []string{"LEAK-CANARY-b10c-0001", "LEAK-CANARY-b10c-0002", denied, broken, "LEAK-CANARY-0dd", odd}
	searchLeaks(t, hay, map[string]string{"mesh-fill log": "block marker", "control /v1/explain?module=deny": "withheld",
		"bus": "prov.applied.ace.broken", "verb applied": "withheld"}, canaries, nil)
	if text, _, _ := m.file("/etc/mb.conf"); strings.Contains(text, "LEAK-CANARY") {
		t.Errorf("the refused block was written: %q", text)
	}
}

package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A program whose restart fails may print what it read: here, the key
// in its secret's file, when only its config file changed (a request of
// changed files alone carries no secret). mesh-fill answers 500 with the
// program's last words; the client's report says the status and that the
// text is withheld, and the key shows in no bucket, event, log line of
// the client's, control socket answer or verb answer.
func TestAProgramThatPrintsASecretWhenItFailsShowsItNowhere(t *testing.T) {
	const key = "LEAK-CANARY-9a0c-printed-by-its-program"
	m := newMesh(t)
	fail := filepath.Join(t.TempDir(), "fail")
	f := &stateFill{m: m, sock: filepath.Join(filepath.Dir(m.sock), "prog-fill.sock"), state: t.TempDir(),
		command: []string{"sh", "-c", fmt.Sprintf(`if [ -e %s ]; then echo "app: the key $(cat %s) is refused"; exit 1; fi`,
			fail, filepath.Join(m.root, "etc/app/key"))}}
	t.Cleanup(f.stop)
	f.start()
	restart := nodes.OnChange{Action: "restart", Unit: "app.service"}
	m.put(spec.ConfigBucket, "ace.app.model", "opus")
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/app/app.conf", Template: "c", OnChange: restart}},
		Secrets: []nodes.SecretSpec{{Name: "api-key", Path: "/etc/app/key", OnChange: restart}},
	}, map[string]string{"c": "model = ${config:model}\n"})
	m.devVault().Set(t.Context(), "own/app/api-key", []byte(key))
	busSaid := bustest.Tap(t, m.nc, nil)
	sock := ctlSock(t)
	m.client("ace", f.socket, withControl(sock))
	m.waitFile("/etc/app/key", key)
	m.waitState("ace", "app", "applied")

	// The program fails from now on, printing the key; only the config
	// file changes.
	if err := os.WriteFile(fail, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.put(spec.ConfigBucket, "ace.app.model", "sonnet")
	m.waitFile("/etc/app/app.conf", "model = sonnet\n")
	r := m.waitState("ace", "app", "failed")
	if why := fmt.Sprint(r["reason"]); !containsAll(why, []string{"500", "withheld", "quotes a secret"}) {
		t.Errorf("the reason %q does not say the 500 and that its text is withheld", why)
	}
	if last := m.fills.requests("app", 0); len(last) == 0 || strings.Contains(fmt.Sprint(last[len(last)-1].Files), "/etc/app/key") {
		t.Fatalf("the last request carried the key's file: this is not the case of a request without a secret")
	}
	m.settle()
	time.Sleep(100 * time.Millisecond)

	hay := map[string]string{"client log": m.logs.String()}
	for _, p := range []string{"/v1/modules", "/v1/explain?module=app", "/v1/graph.dot", "/metrics"} {
		hay["control "+p] = unixGet(t, sock, p)
	}
	for _, what := range []string{"sweep", "applied"} {
		hay["verb "+what] = m.query(what)
	}
	for k, s := range m.everyBucket(t.Context()) {
		hay[k] = s
	}
	hay["bus"] = busSaid()
	searchLeaks(t, hay, map[string]string{"client log": "withheld", "control /v1/explain?module=app": "withheld"},
		[]string{key}, nil)
	// mesh-fill's own log keeps the program's words (it is the node's own
	// record, SPEC §4.3): the search above would have seen them.
	if !strings.Contains(f.log.String(), "is refused") {
		t.Errorf("mesh-fill's log does not hold the program's words: did it fail as the test means?\n%s", f.log.String())
	}
}

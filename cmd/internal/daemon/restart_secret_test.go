package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/novox/mesh-provisioner/nodes"
)

// seedBus is a mesh on a bus where the test connects as lab (a password)
// and ace's client as an nkey user, and the option that gives the client
// that user's seed file (no permissions: what is asked here is what the
// client does with its own secret).
func seedBus(t *testing.T) (*mesh, clientOpt) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	file := filepath.Join(t.TempDir(), "ace.nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newMeshOn(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "lab", Password: "dev-only-lab"}}
		o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	}, "lab")
	return m, func(c *Config) { c.Bus.NKeySeedFile = file }
}

// A client started again that changes nothing puts no report again (SPEC
// §5.3), also of a module whose files hold a secret, at the start or at
// any refill after it: their digests are keyed (hmac-sha256) under a key
// derived from the client's own bus secret, its nkey seed
// (stage.ReportKey), alike at every start. With a key of each run's own, each restart put every such
// report again (an outside audit), and when the start kept the last run's
// digests for files found as sent, the first refill tick put them again
// (another). A file the node-engine finds as sent keeps the digest the
// last run's report says: an owned file holding a secret, a secret's own
// path, a consumers list.
func TestARestartThatChangesNothingPutsNoReportOfAModuleHoldingASecret(t *testing.T) {
	m, asAce := seedBus(t)
	f := m.stateFill()
	v := m.devVault()
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{owned("/etc/app/app.conf", "c", "app.service")},
		Secrets: []nodes.SecretSpec{{Name: "api-key", Path: "/etc/app/api-key"}},
	}, map[string]string{"c": "key = ${secret:api-key}\n"})
	v.Set(t.Context(), "own/app/api-key", []byte("PLANTED-restart-secret"))
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	m.assign("g14", "claude-code", consumerPlan(), nil)
	v.Set(t.Context(), pair("g14", "claude-code", ""), []byte("PLANTED-paired"))
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, asAce, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "app", "applied")
	m.waitConsumers("/etc/gitea/consumers.json", pair("g14", "claude-code", ""))
	m.waitState("ace", "gitea", "applied")
	m.restartMovesNothing(stop, func() {
		m.client("ace", f.socket, asAce, refillEvery(200*time.Millisecond), func(c *Config) { c.StateDir = state })
	}, "app", "gitea")
	was := m.revisions()
	time.Sleep(time.Second) // five refill ticks
	m.settle()
	if moved := movedRevisions(was, m.revisions()); len(moved) > 0 {
		t.Errorf("the refill ticks after the restart put again what did not change: %v", moved)
	}
}

// The client was stopped after its fill of a rotated secret reached the
// node-engine and before the module's report was put (killed while
// mesh-fill restarted the program): the file holds the new value, the
// report still the old one's digest. Started again, the node-engine finds
// the file as sent ("unchanged"); the report must say the file moved all
// the same. Taking "unchanged" for the bytes the last report was of kept
// the old digest until the next change (an outside audit).
func TestARestartReportsASecretFileFilledByARunThatDiedBeforeItsReport(t *testing.T) {
	m, asAce := seedBus(t)
	f := m.stateFill()
	v := m.devVault()
	m.assign("ace", "app", nodes.Plan{
		Files:   []nodes.FileSpec{owned("/etc/app/app.conf", "c", "app.service")},
		Secrets: []nodes.SecretSpec{{Name: "api-key"}},
	}, map[string]string{"c": "key = ${secret:api-key}\n"})
	v.Set(t.Context(), "own/app/api-key", []byte("PLANTED-before"))
	state := t.TempDir()
	withState := func(c *Config) { c.StateDir = state }
	_, stop := m.startClient("ace", f.socket, asAce, withState)
	m.waitFile("/etc/app/app.conf", "key = PLANTED-before\n")
	m.waitState("ace", "app", "applied")
	m.settle()
	digest := func() string {
		t.Helper()
		r, _ := m.report("ace", "app")
		files, _ := r["files"].([]any)
		for _, e := range files {
			if fe, _ := e.(map[string]any); fe["path"] == "/etc/app/app.conf" {
				d, _ := fe["digest"].(string)
				return d
			}
		}
		t.Fatalf("the report %v names no /etc/app/app.conf", r)
		return ""
	}
	before := digest()
	stop()

	v.Set(t.Context(), "own/app/api-key", []byte("PLANTED-after"))
	// What the stopped run's fill left: the file as the rotation renders it.
	if err := writeFile(m.root+"/etc/app/app.conf", "key = PLANTED-after\n"); err != nil {
		t.Fatal(err)
	}
	m.client("ace", f.socket, asAce, withState)
	deadline := time.Now().Add(10 * time.Second)
	for digest() == before {
		if time.Now().After(deadline) {
			r, _ := m.report("ace", "app")
			t.Fatalf("the report still gives app.conf the digest of the value before the rotation: %v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := digest(); !strings.HasPrefix(d, "hmac-sha256:") {
		t.Errorf("app.conf's digest %s is not keyed", d)
	}
}

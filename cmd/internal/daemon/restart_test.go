package daemon

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// revisions lists every key of the client's three output buckets with its
// revision.
func (m *mesh) revisions() map[string]uint64 {
	m.t.Helper()
	out := map[string]uint64{}
	for _, b := range []string{spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket} {
		kv := m.kv(b)
		keys, err := kv.ListKeys(m.t.Context())
		if err != nil {
			m.t.Fatal(err)
		}
		for k := range keys.Keys() {
			if e, err := kv.Get(m.t.Context(), k); err == nil {
				out[b+" "+k] = e.Revision()
			}
		}
	}
	return out
}

// movedRevisions says which keys of was moved, came or went in now.
func movedRevisions(was, now map[string]uint64) []string {
	var out []string
	for k, r := range was {
		if now[k] != r {
			out = append(out, fmt.Sprintf("%s: revision %d → %d", k, r, now[k]))
		}
	}
	for k, r := range now {
		if _, ok := was[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new at revision %d", k, r))
		}
	}
	sort.Strings(out)
	return out
}

// A client stopped and started again while nothing changed puts no report,
// need or item again (SPEC §5.3: a report is written only when it differs
// from the last one written, "at" aside): a file its fill finds unchanged
// keeps the action of the fill that last changed it, as it does at a
// refill tick, though that fill was the last run's. Nor is a file written
// or a program restarted.
func TestAClientRestartedPutsNoUnchangedReportAgain(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.put(spec.ConfigBucket, "ace.web.model", "one")
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{
		owned("/etc/web.conf", "conf", "web.service"),
		{Path: "/etc/web.seed", Template: "seed", Form: "seed"},
	}, Items: []nodes.ItemSpec{{Collection: zshColl, Template: "item"}}},
		map[string]string{"conf": "model=${config:model}\n", "seed": "seeded\n", "item": "alias w=web\n"})
	m.assign("ace", "mail", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/mail.conf", "conf", "")}},
		map[string]string{"conf": "host=${config:host}\n"})
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "mail", "waiting")
	m.settle()
	was := m.revisions()
	sub, _ := m.nc.SubscribeSync("prov.applied.>")
	m.nc.Flush()
	defer func() {
		for {
			msg, err := sub.NextMsg(10 * time.Millisecond)
			if err != nil {
				break
			}
			t.Logf("%s %s", msg.Subject, msg.Data)
		}
	}()
	report, _ := m.get(spec.AppliedBucket, "ace.web")
	st, _ := os.Stat(filepath.Join(m.root, "/etc/web.conf"))
	restarts := f.programRestarts()
	stop()

	time.Sleep(1100 * time.Millisecond) // a new second for "at"
	from := m.fills.count()
	_, stop = m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	waitRequests(t, m, "web", from)
	m.settle()
	if moved := movedRevisions(was, m.revisions()); len(moved) > 0 {
		now, _ := m.get(spec.AppliedBucket, "ace.web")
		t.Errorf("the restart put again what did not change: %v\nbefore: %s\nafter:  %s", moved, report, now)
	}
	if st2, _ := os.Stat(filepath.Join(m.root, "/etc/web.conf")); !st.ModTime().Equal(st2.ModTime()) {
		t.Error("the restart wrote /etc/web.conf again")
	}
	if got := f.programRestarts(); got != restarts {
		t.Errorf("the restart restarted a program: %q, then %q", restarts, got)
	}

	// A value that moved while the client was down is reported written;
	// the file it did not touch keeps its action.
	stop()
	m.put(spec.ConfigBucket, "ace.web.model", "two")
	m.client("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitFile("/etc/web.conf", "model=two\n")
	r := m.waitState("ace", "web", "applied")
	if got := reportFiles(r); got["/etc/web.conf"] != "written" || got["/etc/web.seed"] != "written" {
		t.Errorf("after a value moved while the client was down, the report's files are %v", got)
	}
}

// waitRequests waits until module's fill request made since from was answered.
func waitRequests(t testing.TB, m *mesh, module string, from int) {
	t.Helper()
	m.waitState("ace", module, "applied")
	deadline := time.Now().Add(10 * time.Second)
	for len(m.fills.requests(module, from)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no request of %s since the restart", module)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client started again reads a module's templates archive from its
// state dir's cache (SPEC §3: kept by digest): until it is read the
// module is not reported waiting for it ("not fetched yet") and then
// applied again, two reports and events of a module that never moved
// (SPEC §5.3). The archive here is large (16 MiB of noise) so that its
// read takes longer than the rest of the load.
func TestARestartReportsNoModuleWaitingForAnArchiveItsCacheHolds(t *testing.T) {
	m := newMesh(t)
	noise := make([]byte, 16<<20)
	rand.Read(noise)
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=1\n", "noise": string(noise)})
	state := t.TempDir()
	_, stop := m.startClient("ace", func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.settle()
	stop()
	os.Remove(filepath.Join(m.tmpl, "ace-web.tar.gz")) // only the cache holds it now

	sub, err := m.nc.SubscribeSync("prov.applied.ace.web")
	if err != nil {
		t.Fatal(err)
	}
	m.nc.Flush()
	m.client("ace", func(c *Config) { c.StateDir = state })
	m.waitState("ace", "web", "applied")
	m.settle()
	for {
		msg, err := sub.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(string(msg.Data), `"state":"waiting"`) {
			t.Errorf("the restart reported the module waiting: %s", msg.Data)
		}
	}
}

// A client started again fills only once the vault has answered what the
// plans name and each provider bucket they read has been looked at
// (within a bound): the first fill no longer reports a module that reads
// a secret or a binding waiting ("vault …: not asked yet", "gitea_bound
// …: not written yet" though it is written) and then applied again, nor
// puts its needs as waiting and then met: a need that did not move keeps
// its entry, whose time the server's sweep judges "stood asked" by
// (SPEC §5.2, §5.3, §6.2). The same for a secret the vault holds absent
// or refuses: its need stays as it was, and its report is not put again.
func TestARestartMovesNoNeedOrReportOfASecretOrBindingThatStoodStill(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	v := m.devVault()
	m.boundConsumer()
	m.bucket("gitea_bound")
	m.put("gitea_bound", "ace.cc.gitea-read", `{"state":"bound","values":{"as":"cc-ace","url":"https://forge"}}`)
	secretPlan := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/sec.conf", "k", "")}, Secrets: []nodes.SecretSpec{{Name: "api-key"}}}
	secretTmpl := map[string]string{"k": "key = ${secret:api-key}\n"}
	m.assign("ace", "absent", secretPlan, secretTmpl)
	m.assign("ace", "refused", secretPlan, secretTmpl)
	v.Refuse("own/refused/api-key", "not for you")
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "cc", "applied")
	m.waitState("ace", "absent", "waiting")
	m.waitState("ace", "refused", "failed")
	m.restartMovesNothing(stop, func() { m.client("ace", f.socket, func(c *Config) { c.StateDir = state }) }, "cc")
}

// restartMovesNothing stops ace's client, starts it again (start), waits
// for modules' requests, and fails the test on any need, report or item
// put again, or any applied event published (SPEC §5.3).
func (m *mesh) restartMovesNothing(stop, start func(), modules ...string) {
	m.t.Helper()
	m.settle()
	was := m.revisions()
	stop()

	time.Sleep(1100 * time.Millisecond) // a new second for "at"
	events, err := m.nc.SubscribeSync("prov.applied.ace.>")
	if err != nil {
		m.t.Fatal(err)
	}
	m.nc.Flush()
	from := m.fills.count()
	start()
	for _, mod := range modules {
		waitRequests(m.t, m, mod, from)
	}
	m.settle()
	if moved := movedRevisions(was, m.revisions()); len(moved) > 0 {
		m.t.Errorf("the restart put again what did not change: %v", moved)
	}
	for {
		msg, err := events.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		m.t.Errorf("the restart published %s %s", msg.Subject, msg.Data)
	}
}

// Of two modules that name one owned path, the one that held it keeps it
// across a restart of the client (SPEC §4.3: the node-engine's
// declarations still name the holder and refuse the other, 409). Claims
// made in one load used to be ordered by module name: here "a" came to
// name b's path, failed, and after a restart took it in the client's
// eyes, so b, applied for good, failed naming a, and a was refused by
// mesh-fill: both failed, b's file no longer put back at the refill.
func TestAPathsHolderKeepsItAcrossARestart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service")}}, map[string]string{"c": "from a\n"})
	m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p2", "c", "b.service")}}, map[string]string{"c": "from b\n"})
	state := t.TempDir()
	_, stop := m.startClient("ace", f.socket, func(c *Config) { c.StateDir = state })
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")
	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service"), owned("/etc/p2", "c", "a.service")}},
		map[string]string{"c": "from a\n"})
	m.waitState("ace", "a", "failed")
	m.settle()
	stop()

	m.client("ace", f.socket, refillEvery(200*time.Millisecond), func(c *Config) { c.StateDir = state })
	if err := writeFile(m.root+"/etc/p2", "edited\n"); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/p2", "from b\n") // put back by b's refill
	m.settle()
	if r, _ := m.report("ace", "b"); r["state"] != "applied" {
		t.Errorf("b, which holds /etc/p2 and whose plan did not change, after a restart: %v", r)
	}
	r, _ := m.report("ace", "a")
	if why, _ := r["reason"].(string); r["state"] != "failed" || !strings.Contains(why, "module b (taken first)") {
		t.Errorf("a, which names b's path, after a restart: %v", r)
	}
}

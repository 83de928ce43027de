package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Removal and ownership at the fill socket (SPEC §4.3, §4.7 (r2)), end to
// end: the real daemon, the real mesh-fill keeping its state in a state
// directory, and an embedded nats-server.

// stateFill is a mesh-fill of the test's own, on its own socket and with
// its own --state-dir, that can be stopped and started again; each
// program restart or reload is a line in restarts, and what it logs is in
// log.
type stateFill struct {
	m        *mesh
	sock     string
	state    string
	restarts string
	allow    []string
	command  []string // the program restart or reload run (nil: a line in restarts)
	log      bustest.Buffer
	cancel   func()
	done     chan struct{}
}

func (m *mesh) stateFill(allow ...string) *stateFill {
	m.t.Helper()
	dir := filepath.Dir(m.sock)
	f := &stateFill{m: m, sock: filepath.Join(dir, "state-fill.sock"), state: m.t.TempDir(),
		restarts: filepath.Join(dir, "state-restarts.log"), allow: allow}
	m.t.Cleanup(f.stop)
	f.start()
	return f
}

func (f *stateFill) start() {
	f.m.t.Helper()
	command := f.command
	if command == nil {
		command = []string{"sh", "-c", fmt.Sprintf(`echo "$0 $1" >> %s`, f.restarts)}
	}
	fs := &fill.Server{Root: f.m.root, OnRequest: f.m.fills.add, StateDir: f.state, Allow: f.allow,
		Command: command, Log: zerolog.New(&f.log)}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan struct{})
	go func() { defer close(f.done); fs.Serve(ctx, f.sock) }()
	bustest.Eventually(f.m.t, 5*time.Second, func() error { _, err := os.Stat(f.sock); return err })
}

// stop shuts mesh-fill down (its socket removed) and waits.
func (f *stateFill) stop() {
	if f.cancel == nil {
		return
	}
	f.cancel()
	<-f.done
	f.cancel = nil
}

func (f *stateFill) programRestarts() string {
	b, _ := os.ReadFile(f.restarts)
	return string(b)
}

func (f *stateFill) socket(c *Config) { c.FillSocket = f.sock }

func refillEvery(d time.Duration) clientOpt { return func(c *Config) { c.Refill = d } }

// requests lists the fill requests of module since request from.
func (f *fillLog) requests(module string, from int) []fill.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fill.Request
	for _, r := range f.reqs[min(from, len(f.reqs)):] {
		if r.Module == module {
			out = append(out, r)
		}
	}
	return out
}

func (m *mesh) waitNoFile(path string) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(m.root, path)); !os.IsNotExist(err) {
			return fmt.Errorf("%s still there (%v)", path, err)
		}
		return nil
	})
}

func (m *mesh) waitContains(path, want string, has bool) {
	m.t.Helper()
	bustest.Eventually(m.t, 10*time.Second, func() error {
		got, _, err := m.file(path)
		if err != nil {
			return err
		}
		if strings.Contains(got, want) != has {
			return fmt.Errorf("%s is %q: holding %q should be %v", path, got, want, has)
		}
		return nil
	})
}

// reportFiles is the files of a report, path → action.
func reportFiles(r map[string]any) map[string]string {
	out := map[string]string{}
	fs, _ := r["files"].([]any)
	for _, f := range fs {
		f := f.(map[string]any)
		out[f["path"].(string)], _ = f["action"].(string)
	}
	return out
}

func owned(path, tmpl, unit string) nodes.FileSpec {
	fs := nodes.FileSpec{Path: path, Template: tmpl, Form: "owned"}
	if unit != "" {
		fs.OnChange = nodes.OnChange{Action: "restart", Unit: unit}
	}
	return fs
}

func TestARemovedModuleLosesItsOwnedFilesAndBlockAndKeepsItsSeed(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{
		owned("/etc/web.conf", "conf", ""),
		{Path: "/etc/shared.conf", Template: "block", Form: "managed-block"},
		{Path: "/etc/web.seed", Template: "seed", Form: "seed"},
	}}, map[string]string{"conf": "port=1\n", "block": "web-block\n", "seed": "seeded\n"})
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{
		{Path: "/etc/shared.conf", Template: "block", Form: "managed-block"},
	}}, map[string]string{"block": "api-block\n"})
	m.client("ace", f.socket)
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "api", "applied")
	m.waitContains("/etc/shared.conf", "web-block", true)
	m.waitContains("/etc/shared.conf", "api-block", true)

	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitNoFile("/etc/web.conf")
	m.waitContains("/etc/shared.conf", "web-block", false)
	m.waitContains("/etc/shared.conf", "api-block", true)
	m.waitFile("/etc/web.seed", "seeded\n")
	m.waitState("ace", "api", "applied")
}

func TestAFileDroppedFromThePlanIsRemovedByTheWholeRequestTheChangeSends(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	tmpl := map[string]string{"a": "a=${config:model}\n", "b": "b\n"}
	m.put(spec.ConfigBucket, "ace.web.model", "one")
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/a", "a", ""), owned("/etc/b", "b", "")}}, tmpl)
	m.client("ace", f.socket)
	m.waitFile("/etc/b", "b\n")
	m.waitState("ace", "web", "applied")

	from := m.fills.count()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/a", "a", "")}}, tmpl)
	m.waitNoFile("/etc/b")
	// The report lists the files the module has (SPEC §5.3): /etc/b is
	// gone from it, and the log says the node-engine removed it.
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "web")
		if got := reportFiles(r); len(got) != 1 || got["/etc/a"] == "" {
			return fmt.Errorf("report files %v", got)
		}
		if ls := m.logLines("web", "file no longer in the plan: the node-engine removed it"); len(ls) != 1 || ls[0]["path"] != "/etc/b" {
			return fmt.Errorf("log lines of the removal: %v", ls)
		}
		return nil
	})
	reqs := m.fills.requests("web", from)
	if len(reqs) == 0 || !reqs[0].Whole || len(reqs[0].Files) != 1 {
		t.Fatalf("the plan change sent %+v, want one whole request naming /etc/a", reqs)
	}

	// A change of one file's value sends that file alone, not whole; the
	// report no longer lists the file removed.
	from = m.fills.count()
	m.put(spec.ConfigBucket, "ace.web.model", "two")
	m.waitFile("/etc/a", "a=two\n")
	bustest.Eventually(m.t, 10*time.Second, func() error {
		r, _ := m.report("ace", "web")
		if got := reportFiles(r); len(got) != 1 || got["/etc/a"] != "written" {
			return fmt.Errorf("report files %v", got)
		}
		return nil
	})
	for _, r := range m.fills.requests("web", from) {
		if r.Whole {
			t.Fatalf("a change of one value sent a whole request: %+v", r)
		}
	}
}

// filledWeb is a client whose module web has /etc/web.conf filled by
// mesh-fill f.
func filledWeb(t *testing.T) (*mesh, *stateFill) {
	t.Helper()
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=1\n"})
	m.client("ace", f.socket)
	m.waitFile("/etc/web.conf", "port=1\n")
	m.waitState("ace", "web", "applied")
	return m, f
}

func TestARemovalAfterMeshFillRestartsStillRemoves(t *testing.T) {
	m, f := filledWeb(t)
	f.stop()
	f.start() // the same --state-dir: what it wrote for web is remembered

	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitNoFile("/etc/web.conf")
}

func TestARemovalNotAnsweredIsTriedAgainAtTheTick(t *testing.T) {
	m, f := filledWeb(t)
	f.stop()

	m.del(spec.AssignmentsBucket, "ace.web")
	m.waitGone(spec.AppliedBucket, "ace.web") // the removed report is out
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if n := strings.Count(m.logs.String(), "did not remove the module's files"); n < 2 {
			return fmt.Errorf("the removal was tried %d times", n)
		}
		return nil
	})
	if _, _, err := m.file("/etc/web.conf"); err != nil {
		t.Fatalf("the file went while mesh-fill was down: %v", err)
	}
	f.start()
	m.waitNoFile("/etc/web.conf")
	from := strings.Count(m.logs.String(), "did not remove the module's files")
	time.Sleep(500 * time.Millisecond) // five retry ticks
	if n := strings.Count(m.logs.String(), "did not remove the module's files"); n != from {
		t.Fatalf("the removal was still tried after it was answered: %d then %d", from, n)
	}
}

// A removal still unanswered when the client stops is kept in its state
// directory: started again, the client removes the module's files, and
// leaves alone a module that came back meanwhile.
func TestARemovalNotAnsweredBeforeTheClientStopsIsMadeOnceItStartsAgain(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	state := t.TempDir()
	keep := func(c *Config) { c.StateDir = state }
	for _, mod := range []string{"web", "api"} {
		m.assign("ace", mod, nodes.Plan{Files: []nodes.FileSpec{owned("/etc/"+mod+".conf", "conf", "")}},
			map[string]string{"conf": mod + "\n"})
	}
	_, stop := m.startClient("ace", f.socket, keep)
	m.waitFile("/etc/web.conf", "web\n")
	m.waitFile("/etc/api.conf", "api\n")
	m.waitState("ace", "web", "applied")
	m.waitState("ace", "api", "applied")

	f.stop()
	m.del(spec.AssignmentsBucket, "ace.web")
	m.del(spec.AssignmentsBucket, "ace.api")
	m.waitGone(spec.AppliedBucket, "ace.web") // the removed reports are out: nothing on the bus remembers them
	m.waitGone(spec.AppliedBucket, "ace.api")
	bustest.Eventually(t, 10*time.Second, func() error {
		if n := strings.Count(m.logs.String(), "did not remove the module's files"); n < 2 {
			return fmt.Errorf("the removals were tried %d times", n)
		}
		return nil
	})
	stop()
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/api.conf", "conf", "")}},
		map[string]string{"conf": "api again\n"}) // back while the client was down

	f.start()
	m.client("ace", f.socket, keep)
	m.waitNoFile("/etc/web.conf")
	m.waitFile("/etc/api.conf", "api again\n")
	m.waitState("ace", "api", "applied")
	if _, _, err := m.file("/etc/api.conf"); err != nil {
		t.Fatalf("a module back on the node lost its file: %v", err)
	}
}

// A plan that dropped every file while the client was down: the client
// started again knows nothing the module declared, yet its first whole
// request (of no file) has mesh-fill remove what the module had.
func TestAPlanThatDroppedEveryFileWhileTheClientWasDownLosesThemAtStart(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/web.conf", "conf", "")}},
		map[string]string{"conf": "port=1\n"})
	_, stop := m.startClient("ace", f.socket)
	m.waitFile("/etc/web.conf", "port=1\n")
	m.waitState("ace", "web", "applied")
	stop()

	m.assign("ace", "web", nodes.Plan{}, map[string]string{"conf": "port=1\n"})
	from := m.fills.count()
	m.client("ace", f.socket)
	m.waitNoFile("/etc/web.conf")
	reqs := m.fills.requests("web", from)
	if len(reqs) == 0 || !reqs[0].Whole || len(reqs[0].Files) != 0 {
		t.Fatalf("the start sent %+v, want one whole request of no file", reqs)
	}
	m.waitState("ace", "web", "applied")
}

func TestTwoModulesOnOnePathFailTheSecondNamingBoth(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "web.service")}},
		map[string]string{"conf": "web\n"})
	sock := ctlSock(t)
	m.client("ace", f.socket, refillEvery(200*time.Millisecond), withControl(sock))
	m.waitFile("/etc/x.conf", "web\n")
	m.waitState("ace", "web", "applied")
	restarts := f.programRestarts()

	// api is taken second although its name sorts first: it fails, naming both.
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/x.conf", "conf", "api.service")}},
		map[string]string{"conf": "api\n"})
	r := m.waitState("ace", "api", "failed")
	why, _ := r["reason"].(string)
	for _, w := range []string{"/etc/x.conf", "module api", "module web"} {
		if !strings.Contains(why, w) {
			t.Fatalf("reason %q does not name %q", why, w)
		}
	}
	if _, text := explainOf(t, sock, "api"); !strings.Contains(text, "module web (taken first)") {
		t.Fatalf("explain api does not name web:\n%s", text)
	}
	time.Sleep(time.Second) // five refills
	m.waitFile("/etc/x.conf", "web\n")
	m.waitState("ace", "web", "applied")
	if got := f.programRestarts(); got != restarts {
		t.Fatalf("programs run %q, then %q", restarts, got)
	}
	for _, rq := range m.fills.requests("api", 0) {
		t.Fatalf("api was sent to the node-engine: %+v", rq)
	}
}

// A module on the node since the first load (a, first by name) later
// names a path module b holds: a, the newcomer to that path, fails; b
// stays applied and its file is still put back at the refill. The order is
// per claim, not per module: a used to count as first on every path.
func TestAModuleNamingAPathAnotherHoldsFailsAndTheHolderKeepsIt(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service")}}, map[string]string{"c": "from a\n"})
	m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p2", "c", "b.service")}}, map[string]string{"c": "from b\n"})
	m.client("ace", f.socket, refillEvery(200*time.Millisecond))
	m.waitFile("/etc/p2", "from b\n")
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")
	m.settle()

	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service"), owned("/etc/p2", "c", "a.service")}},
		map[string]string{"c": "from a\n"})
	r := m.waitState("ace", "a", "failed")
	if why, _ := r["reason"].(string); !strings.Contains(why, "/etc/p2") || !strings.Contains(why, "module b (taken first)") {
		t.Errorf("a's reason %q, want it to name /etc/p2 and module b", why)
	}
	if err := writeFile(m.root+"/etc/p2", "edited\n"); err != nil {
		t.Fatal(err)
	}
	m.waitFile("/etc/p2", "from b\n") // put back by b's refill
	if r, _ := m.report("ace", "b"); r["state"] != "applied" {
		t.Errorf("b, which holds /etc/p2 and whose plan did not change: %v", r)
	}
}

func TestAKeyClaimedTwiceIsTheNodeEnginesConflictAndFailsTheSecondAlone(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	keys := func(tmpl, unit string) nodes.FileSpec {
		return nodes.FileSpec{Path: "/etc/env", Template: tmpl, Form: "managed-keys",
			OnChange: nodes.OnChange{Action: "restart", Unit: unit}}
	}
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{keys("env", "web.service")}},
		map[string]string{"env": "PORT=1\n"})
	m.client("ace", f.socket, refillEvery(200*time.Millisecond))
	m.waitState("ace", "web", "applied")
	m.waitContains("/etc/env", "PORT=1", true)
	restarts := f.programRestarts()

	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{keys("env", "api.service")}},
		map[string]string{"env": "PORT=2\n"})
	r := m.waitState("ace", "api", "failed")
	why, _ := r["reason"].(string)
	for _, w := range []string{"409", "PORT", `"api"`, `"web"`} {
		if !strings.Contains(why, w) {
			t.Fatalf("reason %q does not name %s", why, w)
		}
	}
	time.Sleep(time.Second) // five refills
	m.waitContains("/etc/env", "PORT=1", true)
	m.waitState("ace", "web", "applied")
	if got := f.programRestarts(); got != restarts {
		t.Fatalf("programs run %q, then %q", restarts, got)
	}
}

func TestAPathOutsideTheAllowListFailsTheModuleNamingIt(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill("/etc/ok/**")
	m.assign("ace", "web", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/bad.conf", "conf", "")}},
		map[string]string{"conf": "x\n"})
	m.assign("ace", "api", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/ok/api.conf", "conf", "")}},
		map[string]string{"conf": "y\n"})
	m.client("ace", f.socket)
	r := m.waitState("ace", "web", "failed")
	why, _ := r["reason"].(string)
	if !strings.Contains(why, "403") || !strings.Contains(why, "/etc/bad.conf") {
		t.Fatalf("reason %q", why)
	}
	m.waitState("ace", "api", "applied")
	if _, _, err := m.file("/etc/bad.conf"); !os.IsNotExist(err) {
		t.Fatalf("/etc/bad.conf was written: %v", err)
	}
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), `"files":[{`) {
		t.Fatalf("a refused module reports files: %s", b)
	}
}

// Two modules swap their paths in one change of plans. Each one's whole
// request was refused (409) for good, as the other's old declaration still
// held the path it now names, and neither could let go: both failed for
// ever. A module refused so lets go first (a whole request without the
// path held elsewhere), then names it again: the swap settles by itself.
func TestTwoModulesSwappingPathsSettle(t *testing.T) {
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "a.service")}}, map[string]string{"c": "from a\n"})
	m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p2", "c", "b.service")}}, map[string]string{"c": "from b\n"})
	m.client("ace", f.socket)
	m.waitFile("/etc/p1", "from a\n")
	m.waitFile("/etc/p2", "from b\n")
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")
	m.settle()

	m.assign("ace", "a", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p2", "c", "a.service")}}, map[string]string{"c": "from a\n"})
	m.assign("ace", "b", nodes.Plan{Files: []nodes.FileSpec{owned("/etc/p1", "c", "b.service")}}, map[string]string{"c": "from b\n"})
	bustest.Eventually(t, 20*time.Second, func() error {
		p1, _, _ := m.file("/etc/p1")
		p2, _, _ := m.file("/etc/p2")
		ra, _ := m.report("ace", "a")
		rb, _ := m.report("ace", "b")
		if p1 != "from b\n" || p2 != "from a\n" || ra["state"] != "applied" || rb["state"] != "applied" {
			return fmt.Errorf("p1 %q p2 %q, a %v %v, b %v %v", p1, p2, ra["state"], ra["reason"], rb["state"], rb["reason"])
		}
		return nil
	})
}

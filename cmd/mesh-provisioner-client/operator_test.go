package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gdot "gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/daemon"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

func TestStatusPrintsOneAlignedLinePerModuleAndJSONForMachines(t *testing.T) {
	w := newWorld(t)
	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\n")
	w.assign("long-module-name", "/etc/l/a.conf", "flavour = ${config:flavour}\n")
	w.until("1 applied, 1 waiting", "status", "--control", w.sock)
	out := w.until("flavour: not written yet", "status", "--control", w.sock)
	lines := strings.Split(out, "\n")
	if len(lines) < 5 || !strings.HasPrefix(lines[0], "MODULE ") {
		t.Fatalf("status:\n%s", out)
	}
	col := strings.Index(lines[0], "STATE")
	mustContain(t, "status", out, "long-module-name", "waiting", "0/1", "mesh-config_resolved ace.long-module-name.flavour: not written yet",
		"2 modules on node ace: 1 applied, 1 waiting.")
	for _, l := range lines[1:3] {
		if st := strings.Fields(l)[1]; strings.Index(l, st) != col {
			t.Fatalf("the STATE column is not aligned:\n%s", out)
		}
	}

	code, js, errOut := runCLI("status", "--json", "--control", w.sock)
	var m control.Modules
	if err := json.Unmarshal([]byte(js), &m); code != 0 || err != nil || m.Node != "ace" || len(m.Modules) != 2 {
		t.Fatalf("exit %d %v: %s%s", code, err, js, errOut)
	}
	if s := m.Modules[1]; s.Module != "web" || s.State != "applied" || s.Files != 1 || s.FilesMet != 1 || s.Since.IsZero() {
		t.Fatalf("web %+v", s)
	}
}

func TestGraphExplainPrintsTheChainToTheRootAndJSONThatParsesBack(t *testing.T) {
	w := newWorld(t)
	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\nflavour = ${config:flavour}\n")
	root := "mesh-config_resolved ace.web.flavour: not written yet (watched since "
	out := w.until(root, "graph", "explain", "--control", w.sock, "web")
	mustContain(t, "explain", out, "web on ace: waiting since ", "/etc/web/a.conf", "${config:flavour}", "${config:model}")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "web on ace: waiting since ") || !strings.HasPrefix(lines[1], "  /etc/web/a.conf ") {
		t.Fatalf("explain:\n%s", out)
	}

	// flags after the module name work too
	code, js, errOut := runCLI("graph", "explain", "web", "--json", "--control", w.sock)
	var e control.Explanation
	if err := json.Unmarshal([]byte(js), &e); code != 0 || err != nil {
		t.Fatalf("exit %d %v: %s%s", code, err, js, errOut)
	}
	if e.Module != "web" || e.Node != "ace" || e.State != "waiting" || len(e.Outputs) != 1 || len(e.Outputs[0].Chain) != 2 {
		t.Fatalf("%+v", e)
	}
	var found bool
	for _, s := range e.Outputs[0].Chain {
		if s.Placeholder == "${config:flavour}" && len(s.Inputs) == 1 && s.Inputs[0].Root &&
			s.Inputs[0].Bucket == spec.ConfigBucket && s.Inputs[0].Key == "ace.web.flavour" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the root is not named in %s", js)
	}

	w.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	out = w.until("web on ace: applied since ", "graph", "explain", "--control", w.sock, "web")
	mustContain(t, "explain", out, "/etc/web/a.conf  met")
}

func TestAModuleNotOnTheNodeIsSaidWithTheModulesThatAre(t *testing.T) {
	w := newWorld(t)
	w.assign("web", "/etc/web/a.conf", "x\n")
	w.assign("db", "/etc/db/a.conf", "y\n")
	// Both applied: the client is ready (before, the graph lists them but
	// cannot tell yet whether a third is on the node: 503, "not ready").
	w.until("2 modules on node ace: 2 applied.", "status", "--control", w.sock)
	for _, args := range [][]string{
		{"graph", "explain", "--control", w.sock, "ghost"},
		{"graph", "explain", "--json", "--control", w.sock, "ghost"},
		{"graph", "dot", "--module", "ghost", "--control", w.sock},
	} {
		code, out, errOut := runCLI(args...)
		if slices.Contains(args, "--json") { // said on stdout too, as JSON
			var e struct{ Error string }
			if json.Unmarshal([]byte(out), &e) != nil || !strings.Contains(e.Error, "module ghost is not on node ace") {
				t.Fatalf("%v: stdout %q", args, out)
			}
			out = ""
		}
		if code != 1 || out != "" || !strings.Contains(errOut, "module ghost is not on node ace; modules on node ace: db, web") {
			t.Fatalf("%v: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
		}
	}
	// the name as typed, control bytes and all, comes back escaped
	code, _, errOut := runCLI("graph", "explain", "--control", w.sock, "gh\x1b]0;x\x07ost")
	if code != 1 || !strings.Contains(errOut, `module gh\x1b]0;x\aost is not on node ace`) || strings.ContainsAny(errOut, "\x1b\x07") {
		t.Fatalf("exit %d\nstderr %q", code, errOut)
	}
}

func TestTheCommandsSayPlainlyWhenTheDaemonIsNotRunning(t *testing.T) {
	dir, err := os.MkdirTemp("", "cli")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	absent := filepath.Join(dir, "absent.sock")
	stale := filepath.Join(dir, "stale.sock") // left behind by a daemon that died
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	for _, sock := range []string{absent, stale} {
		for _, args := range [][]string{
			{"status", "--control", sock},
			{"graph", "explain", "--control", sock, "web"},
			{"graph", "dot", "--control", sock},
		} {
			code, out, errOut := runCLI(args...)
			if code != 1 || out != "" || !strings.HasPrefix(errOut, "the daemon is not running: ") || !strings.Contains(errOut, sock) {
				t.Fatalf("%v: exit %d\nstdout %q\nstderr %q", args, code, out, errOut)
			}
		}
	}
	// --json says it on stdout too, as JSON: a machine reads JSON either way.
	for _, args := range [][]string{{"status", "--json", "--control", absent}, {"graph", "explain", "--json", "--control", absent, "web"}} {
		code, out, errOut := runCLI(args...)
		var e struct{ Error string }
		if err := json.Unmarshal([]byte(out), &e); code != 1 || err != nil || !strings.HasPrefix(e.Error, "the daemon is not running: ") ||
			!strings.HasPrefix(errOut, "the daemon is not running: ") {
			t.Fatalf("%v: exit %d\nstdout %q (%v)\nstderr %q", args, code, out, err, errOut)
		}
	}
	if code, _, errOut := runCLI("graph", "explain", "--control", absent); code != 2 || !strings.Contains(errOut, "usage:") {
		t.Fatalf("no module: exit %d %q", code, errOut)
	}
}

func TestGraphDotPrintsDOTThatParsesBackForOneModuleOrAll(t *testing.T) {
	w := newWorld(t)
	w.put(spec.ConfigBucket, "ace.web.model", "opus")
	w.assign("web", "/etc/web/a.conf", "model = ${config:model}\n")
	w.assign("db", "/etc/db/a.conf", "port = ${config:port}\n")
	w.until("2 modules on node ace: 1 applied, 1 waiting.", "status", "--control", w.sock)
	count := func(args ...string) (int, int, string) {
		code, out, errOut := runCLI(append([]string{"graph", "dot", "--control", w.sock}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		g := simple.NewDirectedGraph()
		if err := gdot.Unmarshal([]byte(out), g); err != nil {
			t.Fatalf("DOT does not parse back: %v\n%s", err, out)
		}
		return g.Nodes().Len(), g.Edges().Len(), out
	}
	allN, allE, all := count()
	// Its last line ends as a text file's does (> graph.dot, then cat).
	if !strings.HasSuffix(all, "}\n") {
		t.Errorf("the DOT does not end with a newline: %q", all[max(0, len(all)-20):])
	}
	webN, webE, web := count("--module", "web")
	mustContain(t, "DOT", all, `"module:web"`, `"module:db"`, `"config:ace.db.port"`, "color=orange", "color=darkgreen")
	mustContain(t, "DOT of web", web, `"module:web"`, `"need:web/${config:model}"`, `"config:ace.web.model"`)
	if strings.Contains(web, "module:db") || webN >= allN || webE >= allE || webN < 5 {
		t.Fatalf("web %d/%d of %d/%d:\n%s", webN, webE, allN, allE, web)
	}
}

// Every answer of the control socket that is not 200 is JSON saying why
// (its ErrorBody), a path it does not serve or a method it does not take
// too: a typo (/v1/module) was answered "404 page not found" as plain
// text, naming none of the paths it serves.
func TestTheControlSocketAnswersAnUnknownPathOrMethodWithJSONNamingItsPaths(t *testing.T) {
	w := newWorld(t)
	w.assign("web", "/etc/web/a.conf", "x\n")
	w.until("1 module on node ace: 1 applied.", "status", "--control", w.sock)
	for _, c := range []struct {
		method, path string
		code         int
		says         string
	}{
		{"GET", "/v1/module", http.StatusNotFound, "no such path /v1/module: the control socket serves /healthz, /v1/modules, /v1/explain?module=M, /v1/graph.dot[?module=M], /metrics"},
		{"GET", "/", http.StatusNotFound, "no such path /: the control socket serves /healthz"},
		{"POST", "/v1/modules", http.StatusMethodNotAllowed, "method POST is not allowed on /v1/modules: the control socket answers GET (and HEAD) only"},
		{"DELETE", "/metrics", http.StatusMethodNotAllowed, "method DELETE is not allowed on /metrics"},
		{"PUT", "/v1/graph.dot", http.StatusMethodNotAllowed, "method PUT is not allowed on /v1/graph.dot"},
	} {
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", w.sock)
		}}}
		req, _ := http.NewRequest(c.method, "http://control"+c.path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body control.ErrorBody
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil ||
			!strings.Contains(body.Error, c.says) {
			t.Errorf("%s %s: %d %s %s; want %d, JSON saying %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.code, c.says)
		}
		if c.code == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s %s: Allow %q", c.method, c.path, resp.Header.Get("Allow"))
		}
	}
}

// graph dot of a client that is not ready says so, as status and explain
// do: on stderr for the operator (stdout goes to `dot`), and as a comment
// leading the DOT for a machine. Before, a client that had read nothing
// printed an empty graph and exit 0, as an empty node would.
func TestGraphDotOfAClientNotReadySaysSo(t *testing.T) {
	dir, err := os.MkdirTemp("", "cli") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "control.sock")
	d, err := daemon.New(daemon.Config{Node: "ace", Bus: bus.Options{URL: "nats://127.0.0.1:1"}, // no bus there
		FillSocket: filepath.Join(dir, "fill.sock"), StateDir: t.TempDir(), Control: sock, Refill: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { stop(); <-done }()

	var code int
	var out, errOut string
	bustest.Eventually(t, 10*time.Second, func() error {
		if code, out, errOut = runCLI("graph", "dot", "--control", sock); code != 0 {
			return fmt.Errorf("exit %d: %s", code, errOut)
		}
		return nil
	})
	const note = "Not ready (the bus is not connected; the initial load is not done): this is what the client last knew.\n"
	if !strings.HasSuffix(errOut, note) {
		t.Errorf("stderr %q; want it to end %q", errOut, note)
	}
	if !strings.HasPrefix(out, "// not ready: the bus is not connected; the initial load is not done\n") {
		t.Errorf("the DOT does not lead with why the client is not ready:\n%s", out)
	}
	if err := gdot.Unmarshal([]byte(out), simple.NewDirectedGraph()); err != nil {
		t.Errorf("the DOT does not parse: %v\n%s", err, out)
	}
}

// A secret the plan declares that no file names (SPEC §4.2: asked all the
// same, and the module waits for it) is explained as a file is: its name,
// its state, and the vault name at the root with since when and when it
// was last asked. Before, explain listed the module's files, all met, and
// never said what the module waited for.
func TestGraphExplainSaysADeclaredSecretNoFileNames(t *testing.T) {
	w := newWorld(t)
	w.assign("web", "/etc/web/a.conf", "x\n") // no vault answers: api-key waits
	var asg nodes.Assignment
	kv, _ := w.js.KeyValue(t.Context(), spec.AssignmentsBucket)
	e, err := kv.Get(t.Context(), "ace.web")
	if err != nil || json.Unmarshal(e.Value(), &asg) != nil {
		t.Fatal(err)
	}
	asg.Provisioning.Secrets = []nodes.SecretSpec{{Name: "api-key"}}
	b, _ := json.Marshal(asg)
	w.put(spec.AssignmentsBucket, "ace.web", string(b))

	out := w.until("last asked ", "graph", "explain", "--control", w.sock, "web")
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "web on ace: waiting since ") || !strings.HasPrefix(lines[1], "  /etc/web/a.conf ") ||
		!strings.HasSuffix(lines[1], " met") {
		t.Fatalf("explain:\n%s", out)
	}
	if !strings.HasPrefix(lines[2], "  secret api-key ") || !strings.HasSuffix(lines[2], " waiting") ||
		!strings.HasPrefix(lines[3], "    vault own/web/api-key: ") || !strings.Contains(lines[3], "(since ") {
		t.Fatalf("the declared secret is not explained down to its vault name:\n%s", out)
	}

	code, js, errOut := runCLI("graph", "explain", "--json", "--control", w.sock, "web")
	var x control.Explanation
	if err := json.Unmarshal([]byte(js), &x); code != 0 || err != nil || len(x.Outputs) != 2 {
		t.Fatalf("exit %d %v: %s%s", code, err, js, errOut)
	}
	if o := x.Outputs[1]; o.Kind != "secret" || o.Secret != "api-key" || o.State != "waiting" || len(o.Chain) != 1 ||
		o.Chain[0].Vault != "own/web/api-key" || !o.Chain[0].Root || o.Chain[0].Asked.IsZero() {
		t.Fatalf("the declared secret's output: %+v", o)
	}
}

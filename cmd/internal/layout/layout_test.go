package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/novox/mesh-provisioner/"

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// allowed says whether package from (a path under the module) may import
// project package to. Data flows one way: inputs → graph → outputs. The
// SPEC's vocabulary, nodes/spec, is a leaf every other package may use.
func allowed(from, to string) bool {
	top := func(p string) string { return strings.SplitN(p, "/", 2)[0] }
	if from == "nodes/spec" {
		return false
	}
	if from == to || strings.HasPrefix(to, from+"/") || strings.HasPrefix(from, to+"/") {
		return top(from) != "graph" || top(to) == "graph"
	}
	switch top(from) {
	case "graph":
		return false
	case "nodes":
		return top(to) == "graph"
	case "inputs":
		return top(to) == "graph" || top(to) == "nodes" || top(to) == "inputs"
	case "outputs":
		return top(to) == "graph" || top(to) == "nodes" || top(to) == "outputs"
	case "examples", "cmd": // the example mesh's tests and the mains wire everything
		return true
	}
	return false
}

// testAllowed says whether any package's tests may import project package
// to besides what allowed says: the shared embedded bus, which imports
// nothing of the project.
func testAllowed(to string) bool { return to == "inputs/bus/bustest" }

// packages is every package of the module as go list says it.
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "github.com/novox/mesh-provisioner/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var all []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	if len(all) < 5 {
		t.Fatalf("only %d packages listed", len(all))
	}
	return all
}

func TestPackagesImportOnlyWhatTheLayoutAllows(t *testing.T) {
	for _, p := range packages(t) {
		from := strings.TrimPrefix(p.ImportPath, mod)
		for i, imp := range append(append(p.Imports, p.TestImports...), p.XTestImports...) {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			to := strings.TrimPrefix(imp, mod)
			if !allowed(from, to) && !(i >= len(p.Imports) && testAllowed(to)) {
				t.Errorf("%s imports %s: not allowed (graph and nodes/spec import nothing of the project; nodes only graph; inputs and outputs never each other)", from, to)
			}
		}
	}
}

// The daemon is the event loop and wiring: it talks to nodes, never to the
// engine, and only what starts a client (the client's main, the lab's
// start-up) imports it; the operator's commands speak outputs/control.
func TestTheDaemonIsWiringThatOnlyStartUpImports(t *testing.T) {
	const daemon = mod + "cmd/internal/daemon"
	startUp := map[string]bool{mod + "cmd/mesh-provisioner-client": true, mod + "cmd/internal/lab": true}
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			if p.ImportPath == daemon && (imp == mod+"graph" || strings.HasPrefix(imp, mod+"graph/")) {
				t.Errorf("cmd/internal/daemon imports %s: it talks to nodes, never to the engine", imp)
			}
			if imp == daemon && !startUp[p.ImportPath] {
				t.Errorf("%s imports cmd/internal/daemon: only cmd/mesh-provisioner-client and cmd/internal/lab may", p.ImportPath)
			}
		}
	}
}

func TestTheRulesThemselves(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"graph", "nodes", false},
		{"nodes", "graph", true},
		{"inputs/bus", "outputs/fill", false},
		{"outputs/report", "inputs/vault", false},
		{"outputs/report", "nodes", true},
		{"outputs/stage", "outputs/report", true},
		{"outputs/stage", "inputs/bus", false},
		{"outputs/control", "nodes", true},
		{"outputs/control", "inputs/bus", false},
		{"inputs/vault/devvault", "inputs/vault", true},
		{"inputs/vault", "inputs/backoff", true},
		{"inputs/backoff", "outputs/report", false},
		{"cmd/internal/daemon", "inputs/bus", true},
		{"nodes/spec", "nodes", false},
		{"nodes/spec", "graph", false},
		{"nodes", "nodes/spec", true},
		{"inputs/vault", "nodes/spec", true},
		{"outputs/report", "nodes/spec", true},
		{"graph", "nodes/spec", false},
	} {
		if got := allowed(c.from, c.to); got != c.ok {
			t.Errorf("allowed(%s, %s) = %v", c.from, c.to, got)
		}
	}
	if !testAllowed("inputs/bus/bustest") || testAllowed("inputs/bus") {
		t.Error("tests may import inputs/bus/bustest, and nothing else beyond allowed")
	}
}

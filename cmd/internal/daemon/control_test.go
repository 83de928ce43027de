package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/inputs/vault/devvault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// ctlSock is a control socket path short enough for a unix socket.
func ctlSock(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "c.sock")
}

func withControl(sock string) clientOpt { return func(c *Config) { c.Control = sock } }

// ctlGet asks the control socket for path.
func ctlGet(t *testing.T, sock, path string) (int, []byte) {
	t.Helper()
	code, b, err := ctlTry(sock, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return code, b
}

func ctlTry(sock, path string) (int, []byte, error) {
	return control.NewClient(sock, 5*time.Second).Get(context.Background(), path)
}

// explainOf reads module's explanation from the socket, parsed back, and
// the text the operator's command prints of it.
func explainOf(t *testing.T, sock, module string) (*control.Explanation, string) {
	t.Helper()
	e, text, err := explainTry(sock, module)
	if err != nil {
		t.Fatal(err)
	}
	return e, text
}

func explainTry(sock, module string) (*control.Explanation, string, error) {
	code, b, err := ctlTry(sock, "/v1/explain?module="+module)
	if err != nil {
		return nil, "", err
	}
	if code != http.StatusOK {
		return nil, "", fmt.Errorf("explain %s: %d %s", module, code, b)
	}
	var e control.Explanation
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, "", fmt.Errorf("explain %s: %v\n%s", module, err, b)
	}
	var text bytes.Buffer
	if err := control.WriteExplanation(&text, &e); err != nil {
		return nil, "", err
	}
	return &e, text.String(), nil
}

// roots are the steps where the wait or failure began.
func roots(e *control.Explanation) []control.Step {
	var out []control.Step
	var walk func(s control.Step)
	walk = func(s control.Step) {
		if s.Root {
			out = append(out, s)
		}
		for _, in := range s.Inputs {
			walk(in)
		}
	}
	for _, o := range e.Outputs {
		if o.Root { // the output itself, e.g. an item on a cycle
			out = append(out, control.Step{Kind: o.Kind, Where: o.Path + o.Collection, State: o.State, Why: o.Why, Root: true})
		}
		for _, s := range o.Chain {
			walk(s)
		}
	}
	return out
}

func oneFile(module, tmpl string) (nodes.Plan, map[string]string) {
	return nodes.Plan{Files: []nodes.FileSpec{{Path: "/etc/" + module + "/a.conf", Template: "a"}}},
		map[string]string{"a": tmpl}
}

func TestExplainNamesTheInputAtTheRootOfEachKindOfWait(t *testing.T) {
	m := newMesh(t)
	m.bucket("gitea_bound")
	m.del(spec.RegistryBucket, "machine")

	p, tm := oneFile("cfg", "flavour = ${config:flavour}\nmodel = ${config:model}\n")
	m.put(spec.ConfigBucket, "ace.cfg.model", "opus")
	m.assign("ace", "cfg", p, tm)
	p, tm = oneFile("place", "port = ${port:http}\n")
	p.Placement = map[string]map[string]string{"port": {"admin": "9000"}}
	m.assign("ace", "place", p, tm)
	p, tm = oneFile("reg", "name = ${machine:name}\n")
	p.Placement = map[string]map[string]string{"machine": {"name": "ace"}}
	m.assign("ace", "reg", p, tm)
	m.provider("novox", "gitea", nodes.Offer{Provision: "gitea-read"})
	m.provider("novox", "forge", nodes.Offer{Provision: "forge-read"})
	p, tm = oneFile("entry", "as = ${bound:gitea-read:as}\n")
	p.Provisions = []nodes.ProvisionSpec{{Provision: "gitea-read", Provider: "gitea", Credential: "token"}}
	m.assign("ace", "entry", p, tm)
	p, tm = oneFile("nobucket", "as = ${bound:forge-read:as}\n")
	p.Provisions = []nodes.ProvisionSpec{{Provision: "forge-read", Provider: "forge", Credential: "token"}}
	m.assign("ace", "nobucket", p, tm)
	p, tm = oneFile("silent", "key = ${secret:api}\n")
	p.Secrets = []nodes.SecretSpec{{Name: "api"}}
	m.assign("ace", "silent", p, tm)
	m.assign("ace", "cyc-a", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c2", Template: "i"}},
		Collections: []nodes.CollectionSpec{{Name: "c1", Comment: "#"}}}, map[string]string{"i": "${collected:c1}"})
	m.assign("ace", "cyc-b", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c1", Template: "i"}},
		Collections: []nodes.CollectionSpec{{Name: "c2", Comment: "#"}}}, map[string]string{"i": "${collected:c2}"})
	// bee's fill socket is a path where nothing listens.
	p, tm = oneFile("down", "state = ${dir:state}\n")
	p.Placement = map[string]map[string]string{"dir": {"state": "/var/lib/down"}}
	m.assign("bee", "down", p, tm)

	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	nowhere := filepath.Join(filepath.Dir(sock), "nowhere.sock")
	// bee's control socket in a directory of its own: two daemons of one
	// process bind their sockets under the same temporary name
	// (.new-<pid>), so in one directory one could take the other's.
	beeSock := filepath.Join(filepath.Dir(ctlSock(t)), "bee.sock")
	m.client("bee", withControl(beeSock), func(c *Config) { c.FillSocket = nowhere })

	type want struct {
		module, state, kind string
		where               func(s control.Step) bool
		why, text           []string
	}
	cases := []want{
		{"cfg", "waiting", "config", func(s control.Step) bool { return s.Bucket == spec.ConfigBucket && s.Key == "ace.cfg.flavour" },
			[]string{"mesh-config_resolved ace.cfg.flavour: not written yet"},
			[]string{"${config:flavour}", "mesh-config_resolved ace.cfg.flavour: not written yet (watched since ", "${config:model}"}},
		{"place", "waiting", "placement", func(s control.Step) bool { return s.Bucket == spec.AssignmentsBucket && s.Key == "ace.place" },
			[]string{"placement.port.http is not in the plan of place"},
			[]string{"${port:http}", "mesh-controller_assignments ace.place: placement.port.http is not in the plan of place"}},
		{"reg", "waiting", "registry", func(s control.Step) bool { return s.Bucket == spec.RegistryBucket && s.Key == "machine" },
			[]string{"does not name kind machine"},
			[]string{"${machine:name}", "the registry (mesh-provisioner_registry) does not name kind machine (watched since "}},
		{"entry", "waiting", "bound", func(s control.Step) bool { return s.Bucket == "gitea_bound" && s.Key == "ace.entry.gitea-read" },
			[]string{"gitea_bound ace.entry.gitea-read: not written yet"},
			[]string{"${bound:gitea-read:as}", "gitea_bound ace.entry.gitea-read: not written yet (watched since "}},
		{"nobucket", "waiting", "bound", func(s control.Step) bool { return s.Bucket == "forge_bound" && s.Key == "ace.nobucket.forge-read" },
			[]string{"bucket forge_bound does not exist yet"},
			[]string{"forge_bound ace.nobucket.forge-read: bucket forge_bound does not exist yet", "(watched since "}},
		{"silent", "waiting", "vault", func(s control.Step) bool { return s.Vault == "own/silent/api" && s.Secret },
			[]string{"vault own/silent/api: no answer: no vault listens on mesh-vault.get.provisioner.ace"},
			[]string{"${secret:api}", "vault own/silent/api: no answer: no vault listens on mesh-vault.get.provisioner.ace (since ", ", last asked "}},
		{"cyc-a", "failed", "item", func(s control.Step) bool { return s.Where == "c2" },
			[]string{"cycle", "item cyc-a/c2", "item cyc-b/c1"},
			[]string{"item c2", "failed", "cycle", "item cyc-a/c2", "item cyc-b/c1"}},
	}
	for _, c := range cases {
		t.Run(c.module, func(t *testing.T) {
			var e *control.Explanation
			var text string
			var root control.Step
			bustest.Eventually(t, 10*time.Second, func() error {
				var err error
				if e, text, err = explainTry(sock, c.module); err != nil {
					return err
				}
				if e.State != c.state {
					return fmt.Errorf("state %s, want %s", e.State, c.state)
				}
				for _, r := range roots(e) {
					if (c.kind == "" || r.Kind == c.kind) && c.where(r) && containsAll(r.Why, c.why) {
						root = r
						return nil
					}
				}
				b, _ := json.Marshal(e)
				return fmt.Errorf("no root %s %v in %s", c.kind, c.why, b)
			})
			if !containsAll(text, append(c.text, c.module+" on ace: "+c.state+" since ")) {
				t.Fatalf("text lacks %q:\n%s", c.text, text)
			}
			if !strings.Contains(text, root.Why) && c.kind != "placement" && c.kind != "bound" {
				t.Fatalf("text does not say the root's reason %q:\n%s", root.Why, text)
			}
			t.Logf("%s", text)
			if c.module == "cfg" && !strings.Contains(text, "${config:model}") {
				t.Fatalf("a met placeholder is not listed:\n%s", text)
			}
		})
	}
	t.Run("fill socket down", func(t *testing.T) {
		var e *control.Explanation
		var text string
		bustest.Eventually(t, 10*time.Second, func() error {
			var err error
			if e, text, err = explainTry(beeSock, "down"); err != nil {
				return err
			}
			if e.State != "failed" || e.Fill == nil {
				return fmt.Errorf("state %s fill %v", e.State, e.Fill)
			}
			return nil
		})
		t.Logf("%s", text)
		if e.Fill.Socket != nowhere || !strings.Contains(e.Fill.Why, nowhere) || e.Outputs[0].State != "met" {
			t.Fatalf("fill %+v outputs %+v", e.Fill, e.Outputs)
		}
		if !strings.Contains(text, "fill socket "+nowhere+": not answering") || !strings.Contains(text, "/etc/down/a.conf") {
			t.Fatalf("text:\n%s", text)
		}
	})
	t.Run("not here", func(t *testing.T) {
		bustest.Eventually(t, 5*time.Second, func() error {
			if _, _, err := explainTry(sock, "cyc-b"); err != nil {
				return err
			}
			return nil
		})
		code, b := ctlGet(t, sock, "/v1/explain?module=ghost")
		var ce control.ErrorBody
		if err := json.Unmarshal(b, &ce); err != nil || code != http.StatusNotFound {
			t.Fatalf("%d %s", code, b)
		}
		if !strings.Contains(ce.Error, "module ghost is not on node ace") || !strings.Contains(ce.Error, "cfg, cyc-a, cyc-b, entry") ||
			len(ce.Modules) != 8 {
			t.Fatalf("%+v", ce)
		}
		// no module named: a bad request, not a module not here
		if code, b := ctlGet(t, sock, "/v1/explain"); code != http.StatusBadRequest || !strings.Contains(string(b), "name a module") {
			t.Errorf("/v1/explain with no module: %d %s", code, b)
		}
	})
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

func TestExplainStatusAndDOTNameSecretsButNeverShowTheirValues(t *testing.T) {
	const value = "s3cr3t-VALUE-4711"
	m := newMesh(t)
	v := devvault.New(zerolog.Nop())
	if err := v.Start(m.nc, m.js); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	v.Set(t.Context(), "own/sec/tok", []byte(value))
	m.put(spec.ConfigBucket, "ace.sec.model", "opus")
	m.assign("ace", "sec", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/sec/a.conf", Template: "a"}},
		Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/etc/sec/tok"}},
		Items:   []nodes.ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}},
	}, map[string]string{"a": "model = ${config:model}\ntoken = ${secret:tok}\n", "i": "alias sec=true\n"})
	p, tm := oneFile("absent", "key = ${secret:api}\n")
	p.Secrets = []nodes.SecretSpec{{Name: "api", Path: "/etc/absent/api"}}
	m.assign("ace", "absent", p, tm)
	sock := ctlSock(t)
	d := m.client("ace", withControl(sock))
	m.waitState("ace", "sec", "applied")

	var e *control.Explanation
	var text string
	bustest.Eventually(m.t, 10*time.Second, func() error {
		var err error
		if e, text, err = explainTry(sock, "absent"); err != nil {
			return err
		}
		for _, r := range roots(e) {
			if r.Kind == "vault" && r.Vault == "own/absent/api" && r.Why == "vault own/absent/api: absent" && !r.Asked.IsZero() {
				return nil
			}
		}
		return fmt.Errorf("no absent vault root:\n%s", text)
	})
	t.Logf("%s", text)
	if !strings.Contains(text, "vault own/absent/api: absent (since ") || !strings.Contains(text, ", last asked ") || !strings.Contains(text, "/etc/absent/api") ||
		!strings.Contains(text, "waiting (secret api)") {
		t.Fatalf("text:\n%s", text)
	}

	e, text = explainOf(t, sock, "sec")
	kinds := map[string]control.Output{}
	for _, o := range e.Outputs {
		kinds[o.Kind] = o
	}
	if e.State != "applied" || kinds["file"].State != "met" || kinds["secret-file"].Secret != "tok" ||
		kinds["secret-file"].Path != "/etc/sec/tok" || kinds["item"].Collection != "shell:zsh:normal" {
		t.Fatalf("explanation %+v", e)
	}
	t.Logf("%s", text)
	// SPEC §5.5's "met (secret api-key, asked 12:03:11)".
	asked := kinds["secret-file"].Asked
	if asked.IsZero() || time.Since(asked) > time.Minute || !strings.Contains(text, "met (secret tok, asked "+asked.Local().Format("15:04:05")+")") ||
		!strings.Contains(text, "/etc/sec/tok") || !strings.Contains(text, "item shell:zsh:normal") {
		t.Fatalf("asked %v, text:\n%s", asked, text)
	}

	code, dotOut := ctlGet(t, sock, "/v1/graph.dot")
	_, whole := ctlGet(t, sock, "/v1/explain?module=sec")
	_, mods := ctlGet(t, sock, "/v1/modules")
	for what, b := range map[string][]byte{"DOT": dotOut, "explain": whole, "modules": mods, "text": []byte(text), "logs": []byte(m.logs.String())} {
		if bytes.Contains(b, []byte(value)) {
			t.Fatalf("the secret's value is in the %s", what)
		}
	}
	if code != http.StatusOK || !bytes.Contains(dotOut, []byte(`"vault:own/sec/tok"`)) {
		t.Fatalf("%d\n%s", code, dotOut)
	}
	back := simple.NewDirectedGraph()
	if err := dot.Unmarshal(dotOut, back); err != nil {
		t.Fatalf("DOT does not parse back: %v\n%s", err, dotOut)
	}
	var nodesN, edgesN int
	d.Do(t.Context(), func(ms *nodes.NodeGraph) {
		g := ms.Graph()
		nodesN = g.Len()
		type pair struct{ a, b int64 }
		seen := map[pair]bool{}
		boxes := map[graph.Key]bool{}
		for _, n := range g.Nodes() {
			for _, in := range n.Inputs() {
				seen[pair{in.ID(), n.ID()}] = true
			}
			if k, _, ok := ms.Behind(n); ok { // a config need: its key drawn as its input
				boxes[k] = true
				edgesN++
				if reg := (graph.Key{Kind: nodes.KindRegistry, Name: "config"}); k != reg {
					boxes[reg] = true // and the registry's entry for kind config, which it reads too
					edgesN++
				}
			}
		}
		nodesN += len(boxes)
		edgesN += len(seen)
	})
	if back.Nodes().Len() != nodesN || back.Edges().Len() != edgesN || nodesN < 10 {
		t.Fatalf("DOT has %d nodes, %d edges; the engine %d, %d", back.Nodes().Len(), back.Edges().Len(), nodesN, edgesN)
	}
	_, one := ctlGet(t, sock, "/v1/graph.dot?module=absent")
	if !bytes.Contains(one, []byte(`"module:absent"`)) || bytes.Contains(one, []byte("module:sec")) {
		t.Fatalf("DOT of one module:\n%s", one)
	}

	var ms control.Modules
	if err := json.Unmarshal(mods, &ms); err != nil || ms.Node != "ace" || len(ms.Modules) != 2 {
		t.Fatalf("%v %s", err, mods)
	}
	got := map[string]control.ModuleStatus{}
	for _, s := range ms.Modules {
		got[s.Module] = s
	}
	if s := got["sec"]; s.State != "applied" || s.Files != 2 || s.FilesMet != 2 || s.Since.IsZero() {
		t.Fatalf("sec %+v", s)
	}
	if s := got["absent"]; s.State != "waiting" || s.Files != 2 || s.FilesMet != 0 || !strings.Contains(s.Reason, "own/absent/api") {
		t.Fatalf("absent %+v", s)
	}
	var st bytes.Buffer
	control.WriteStatus(&st, &ms)
	t.Logf("%s", st.String())
	lines := strings.Split(st.String(), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "MODULE") || !strings.HasPrefix(lines[2], "sec ") ||
		strings.Index(lines[1], "waiting") != strings.Index(lines[0], "STATE") || strings.Index(lines[2], "applied") != strings.Index(lines[0], "STATE") ||
		!strings.Contains(st.String(), "2 modules on node ace: 1 applied, 1 waiting.") {
		t.Fatalf("status:\n%s", st.String())
	}

	metrics := scrape(t, sock)
	if metric(metrics, "provisioner_vault_asks_total", "outcome", "sealed") < 1 || metric(metrics, "provisioner_vault_asks_total", "outcome", "absent") < 1 {
		t.Fatalf("vault asks not counted")
	}
}

// scrape reads /metrics and parses the Prometheus text format.
func scrape(t *testing.T, sock string) map[string]*dto.MetricFamily {
	t.Helper()
	code, b := ctlGet(t, sock, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, b)
	}
	return fams
}

// metric is the value of name (with label = value when given): a
// counter's, a gauge's, or a histogram's sample count.
func metric(fams map[string]*dto.MetricFamily, name string, label ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, mt := range f.GetMetric() {
		if len(label) == 2 {
			ok := false
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == label[0] && lp.GetValue() == label[1] {
					ok = true
				}
			}
			if !ok {
				continue
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue()
		case mt.Gauge != nil:
			return mt.Gauge.GetValue()
		case mt.Histogram != nil:
			return float64(mt.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetricsMoveWithAChangeAndHealthzFollowsTheBus(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "web", "applied")
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if code, b := ctlGet(t, sock, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})

	// The report and /metrics are read at two instants: the gauge follows
	// the report as it is written, not at the end of the batch.
	var before map[string]*dto.MetricFamily
	bustest.Eventually(t, time.Second, func() error {
		before = scrape(t, sock)
		if metric(before, "provisioner_modules", "state", "applied") != 1 || metric(before, "provisioner_fills_total", "outcome", "ok") < 1 {
			return fmt.Errorf("after the first fill: modules applied %v, fills %v", metric(before, "provisioner_modules", "state", "applied"),
				metric(before, "provisioner_fills_total", "outcome", "ok"))
		}
		return nil
	})
	m.put(spec.ConfigBucket, "ace.web.flavour", "mint")
	m.waitFile("/etc/web/c.conf", "flavour = mint\n")
	// The registry's entry for config changes, every value stays: the
	// placeholders are recomputed and cut off.
	entry, _ := m.get(spec.RegistryBucket, "config")
	m.put(spec.RegistryBucket, "config", strings.Replace(entry, "{", "{ ", 1))
	var after map[string]*dto.MetricFamily
	moved := []string{"provisioner_stabilizations_total", "provisioner_nodes_recomputed_total", "provisioner_nodes_changed_total",
		"provisioner_cutoffs_total", "provisioner_fill_seconds", "provisioner_stabilize_seconds"}
	bustest.Eventually(m.t, 5*time.Second, func() error {
		after = scrape(t, sock)
		for _, name := range moved {
			if metric(after, name) <= metric(before, name) {
				return fmt.Errorf("%s did not move: %v → %v", name, metric(before, name), metric(after, name))
			}
		}
		if metric(after, "provisioner_fills_total", "outcome", "ok") <= metric(before, "provisioner_fills_total", "outcome", "ok") {
			return fmt.Errorf("fills did not move")
		}
		return nil
	})

	bustest.Stop(m.s)
	bustest.Eventually(m.t, 5*time.Second, func() error {
		if code, b := ctlGet(t, sock, "/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(string(b), "the bus is not connected") {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	m.s = bustest.Start(t, m.again)
	bustest.Eventually(m.t, 10*time.Second, func() error {
		if code, b := ctlGet(t, sock, "/healthz"); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, b)
		}
		return nil
	})
	if n := metric(scrape(t, sock), "provisioner_bus_reconnects_total"); n != 1 {
		t.Fatalf("reconnects %v", n)
	}
}

func TestHealthzSaysWhatIsNotReadyYet(t *testing.T) {
	d, err := New(Config{Node: "ace", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	d.ControlHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "the bus is not connected; the initial load is not done") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	d.connected.Store(true)
	rec = httptest.NewRecorder()
	d.ControlHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "bus") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// childEnv names the socket a re-run of this test binary asks, as another
// user, in TestControlPeerChild.
const childEnv = "MESH_CONTROL_CHILD_SOCK"

func TestControlPeerChild(t *testing.T) {
	sock := os.Getenv(childEnv)
	if sock == "" {
		t.Skip("run by TestTheControlSocketIsMode0600AndRefusesOtherUsers as another uid")
	}
	code, b, err := control.NewClient(sock, 5*time.Second).Get(context.Background(), "/v1/modules")
	if err != nil {
		fmt.Printf("CHILD error=%v\n", err)
		return
	}
	fmt.Printf("CHILD uid=%d status=%d body=%s\n", os.Getuid(), code, bytes.ReplaceAll(b, []byte("\n"), nil))
}

func TestTheControlSocketIsMode0600AndRefusesOtherUsers(t *testing.T) {
	m := newMesh(t)
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	bustest.Eventually(m.t, 5*time.Second, func() error {
		_, err := os.Stat(sock)
		return err
	})
	st, err := os.Stat(sock)
	if err != nil || st.Mode()&os.ModeSocket == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("control socket %v mode %v", err, st.Mode())
	}
	if code, _ := ctlGet(t, sock, "/v1/modules"); code != http.StatusOK {
		t.Fatalf("the daemon's own user is refused: %d", code)
	}
	if os.Getuid() != 0 {
		t.Skip("asking as another uid needs root to start a child as that uid; the test runs as uid", os.Getuid())
	}
	// The test binary, copied where another user may run it.
	dir, err := os.MkdirTemp("", "peer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, _ := os.Executable()
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "daemon.test")
	if err := os.WriteFile(child, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(sock), 0o755) // the socket's directory is open: its mode alone guards it
	askAsNobody := func() string {
		cmd := exec.Command(child, "-test.run=^TestControlPeerChild$", "-test.count=1")
		cmd.Dir = dir
		cmd.Env = []string{childEnv + "=" + sock, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := askAsNobody(); !strings.Contains(out, "CHILD error=") || !strings.Contains(out, "permission denied") {
		t.Fatalf("mode 0600 did not keep uid 65534 out:\n%s", out)
	}
	os.Chmod(sock, 0o666) // widened by hand: the peer check still refuses
	out := askAsNobody()
	if !strings.Contains(out, "CHILD uid=65534 status=403") || !strings.Contains(out, "uid 65534 is neither the daemon's uid (0) nor root: refused") {
		t.Fatalf("uid 65534 was not refused:\n%s", out)
	}
	if !strings.Contains(m.logs.String(), "control socket: request refused") {
		t.Fatal("the refusal is not logged")
	}
}

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// ModuleStatus is one line of /v1/modules.
type ModuleStatus struct {
	Module string    `json:"module"`
	State  string    `json:"state"`
	Files  int       `json:"files"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason,omitempty"`
}

// Explanation is /v1/explain's answer: a module and, for each of its
// files (and items), the chain down to the inputs at its root.
type Explanation struct {
	Node    string              `json:"node"`
	Module  string              `json:"module"`
	State   string              `json:"state"`
	Since   time.Time           `json:"since"`
	Reason  string              `json:"reason,omitempty"`
	Outputs []graph.Explanation `json:"outputs"`
}

// serveControl serves the control socket (SPEC §5.5), mode 0600.
func (d *Daemon) serveControl(ctx context.Context) (func(), error) {
	path := d.cfg.Control
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, errors.New("control socket " + path + ": another client answers on it")
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	srv := &http.Server{Handler: d.ControlHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = os.Remove(path)
	}, nil
}

// ControlHandler is the control socket's HTTP handler.
func (d *Daemon) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if !d.connected.Load() || !d.ready.Load() {
			http.Error(w, "not ready: bus connected="+boolText(d.connected.Load())+", initial load done="+boolText(d.ready.Load()), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
		var out []ModuleStatus
		err := d.Do(r.Context(), func(m *nodes.Mesh) { out = d.statuses() })
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		var out *Explanation
		var ferr error
		err := d.Do(r.Context(), func(m *nodes.Mesh) { out, ferr = d.explain(r.URL.Query().Get("module")) })
		if err == nil && ferr != nil {
			http.Error(w, ferr.Error(), http.StatusNotFound)
			return
		}
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/graph.dot", func(w http.ResponseWriter, r *http.Request) {
		var out []byte
		var ferr error
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			mod := r.URL.Query().Get("module")
			if mod == "" {
				out, ferr = m.Graph().DOT("provisioner")
				return
			}
			n := m.ModuleNode(mod)
			if n == nil {
				ferr = d.notHere(mod)
				return
			}
			out, ferr = m.Graph().DOT("provisioner", n.Key())
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/vnd.graphviz")
		w.Write(out)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

func (d *Daemon) statuses() []ModuleStatus {
	out := []ModuleStatus{}
	for _, name := range d.mesh.Modules() {
		v := d.mesh.View(name)
		st := ModuleStatus{Module: name, Files: len(v.Files), Since: v.Since, Reason: v.Reason}
		if mo := d.modules[name]; mo != nil && mo.state != "" {
			st.State = mo.state
			if mo.failure != "" {
				st.Reason = mo.failure
			}
			if !mo.since.IsZero() {
				st.Since = mo.since
			}
		} else {
			st.State = stateWord(v.State)
		}
		out = append(out, st)
	}
	return out
}

func (d *Daemon) explain(module string) (*Explanation, error) {
	mn := d.mesh.ModuleNode(module)
	if mn == nil {
		return nil, d.notHere(module)
	}
	v := d.mesh.View(module)
	e := &Explanation{Node: d.cfg.Node, Module: module, State: stateWord(v.State), Since: v.Since, Reason: v.Reason}
	if mo := d.modules[module]; mo != nil && mo.failure != "" {
		e.State, e.Reason = "failed", mo.failure
	}
	g := d.mesh.Graph()
	meta := func(n *graph.Node) any { return n.Meta }
	for _, in := range mn.Inputs() {
		if k := in.Key().Kind; k == nodes.KindFile || k == nodes.KindItem {
			x, _ := g.Explain(in.Key(), meta)
			e.Outputs = append(e.Outputs, x)
		}
	}
	if len(e.Outputs) == 0 { // a plan or archive that failed: show the module itself
		x, _ := g.Explain(mn.Key(), meta)
		e.Outputs = append(e.Outputs, x)
	}
	return e, nil
}

func (d *Daemon) notHere(module string) error {
	return errors.New("module " + module + " is not on node " + d.cfg.Node + "; modules here: " + strings.Join(d.mesh.Modules(), ", "))
}

func stateWord(s graph.State) string {
	if s == graph.Ready {
		return "applied"
	}
	return s.String()
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// The control socket (SPEC §5.5): HTTP on a unix socket, mode 0600, that
// answers only peers running as the daemon's uid or root.
//
//	GET /healthz              200 "ok" once the bus is connected and the initial load is done, else 503 saying which
//	GET /v1/modules           Modules (JSON)
//	GET /v1/explain?module=M  Explanation (JSON); 404 ControlError when M is not on this node
//	GET /v1/graph.dot[?module=M]  the graph in Graphviz DOT (text/vnd.graphviz)
//	GET /metrics              Prometheus text format
//
// Every error is a ControlError (JSON) with a status code.

// Modules is /v1/modules' answer: every module of this node.
type Modules struct {
	Node    string         `json:"node"`
	At      time.Time      `json:"at"` // when the daemon answered
	Modules []ModuleStatus `json:"modules"`
}

// ModuleStatus is one module of /v1/modules.
type ModuleStatus struct {
	Module   string    `json:"module"`
	State    string    `json:"state"`     // applied | waiting | failed
	Files    int       `json:"files"`     // files of the plan (secret files included)
	FilesMet int       `json:"files_met"` // of them, those whose every value is there
	Since    time.Time `json:"since"`     // when the module entered State
	Reason   string    `json:"reason,omitempty"`
}

// ControlError is the body of every control socket answer that is not 200.
type ControlError struct {
	Error   string   `json:"error"`
	Node    string   `json:"node,omitempty"`
	Modules []string `json:"modules,omitempty"` // a module not here: the modules that are
}

// serveControl serves the control socket. The socket is bound under a
// temporary name, made 0600 and only then renamed into place, so it is
// never reachable with a wider mode.
func (d *Daemon) serveControl(ctx context.Context) (func(), error) {
	path := d.cfg.Control
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, errors.New("control socket " + path + ": another client answers on it")
	}
	tmp := path + ".new-" + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	srv := &http.Server{
		Handler:           d.peerCheck(d.ControlHandler()),
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext:       fill.ConnContext,
	}
	go func() { _ = srv.Serve(fill.PeerListener{Listener: ln}) }()
	d.log.Info().Str("socket", path).Msg("control socket answering")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = os.Remove(path)
	}, nil
}

// peerCheck refuses a peer whose uid is neither the daemon's nor root's.
// The socket's mode already keeps other users out; this holds when the
// mode was widened by hand.
func (d *Daemon) peerCheck(h http.Handler) http.Handler {
	self := os.Getuid()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, ok := fill.PeerUID(r.Context())
		if !ok || (uid != self && uid != 0) {
			who := "a peer whose uid could not be read"
			if ok {
				who = "uid " + strconv.Itoa(uid)
			}
			d.log.Warn().Int("peer_uid", uid).Str("path", r.URL.Path).Msg("control socket: request refused")
			writeError(w, http.StatusForbidden, ControlError{Error: "control socket: " + who +
				" is neither the daemon's uid (" + strconv.Itoa(self) + ") nor root: refused"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ControlHandler is the control socket's HTTP handler (without the peer
// check, which needs the socket).
func (d *Daemon) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		var not []string
		if !d.connected.Load() {
			not = append(not, "the bus is not connected")
		}
		if !d.ready.Load() {
			not = append(not, "the initial load is not done")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(not) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", strings.Join(not, "; "))
			return
		}
		fmt.Fprintln(w, "ok: the bus is connected and the initial load is done")
	})
	mux.HandleFunc("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
		var out Modules
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			out = Modules{Node: d.cfg.Node, At: time.Now(), Modules: d.statuses()}
		})
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		mod := r.URL.Query().Get("module")
		var out *Explanation
		var notHere *ControlError
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			if out = d.explain(mod); out == nil {
				notHere = d.notHere(mod)
			}
		})
		if err == nil && notHere != nil {
			writeError(w, http.StatusNotFound, *notHere)
			return
		}
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/graph.dot", func(w http.ResponseWriter, r *http.Request) {
		mod := r.URL.Query().Get("module")
		var out []byte
		var derr error
		var notHere *ControlError
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			if mod == "" {
				out, derr = m.Graph().DOT("provisioner")
				return
			}
			n := m.ModuleNode(mod)
			if n == nil {
				notHere = d.notHere(mod)
				return
			}
			out, derr = m.Graph().DOT("provisioner", n.Key())
		})
		switch {
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, ControlError{Error: "the daemon's loop did not answer: " + err.Error()})
		case notHere != nil:
			writeError(w, http.StatusNotFound, *notHere)
		case derr != nil:
			writeError(w, http.StatusInternalServerError, ControlError{Error: "rendering the graph: " + derr.Error()})
		default:
			w.Header().Set("Content-Type", "text/vnd.graphviz")
			w.Write(out)
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// moduleState is what the module's report says (or will say at the end
// of the batch): the view's state, or failed when the fill socket failed.
func (d *Daemon) moduleState(v *nodes.ModuleView) (state, reason string, since time.Time) {
	state, reason, since = stateWord(v.State), v.Reason, v.Since
	said, ok := d.out.Said(v.Name)
	if ok && v.State == graph.Ready && said.Failure != "" {
		state, reason = "failed", said.Failure
	}
	if ok && said.State == state && !said.Since.IsZero() {
		since = said.Since
	}
	return state, reason, since
}

func (d *Daemon) statuses() []ModuleStatus {
	out := []ModuleStatus{}
	for _, name := range d.mesh.Modules() {
		v := d.mesh.View(name)
		st := ModuleStatus{Module: name, Files: len(v.Files)}
		st.State, st.Reason, st.Since = d.moduleState(v)
		for _, f := range v.Files {
			if f.State == graph.Ready {
				st.FilesMet++
			}
		}
		out = append(out, st)
	}
	return out
}

func (d *Daemon) notHere(module string) *ControlError {
	mods := d.mesh.Modules()
	here := "no module is assigned to node " + d.cfg.Node
	if len(mods) > 0 {
		here = "modules on node " + d.cfg.Node + ": " + strings.Join(mods, ", ")
	}
	if module == "" {
		return &ControlError{Error: "no module named; " + here, Node: d.cfg.Node, Modules: mods}
	}
	return &ControlError{Error: "module " + module + " is not on node " + d.cfg.Node + "; " + here,
		Node: d.cfg.Node, Modules: mods}
}

func stateWord(s graph.State) string {
	if s == graph.Ready {
		return "applied"
	}
	return s.String()
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, ControlError{Error: "the daemon's loop did not answer: " + err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, e ControlError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(e)
}

// runCalls runs the calls Do handed the loop during the batch just
// stabilised, so the control socket never reads a graph half-changed.
func (d *Daemon) runCalls() {
	for _, c := range d.calls {
		c.fn()
		close(c.done)
	}
	d.calls = nil
}

// ControlClient talks HTTP to a daemon's control socket sock: requests go
// to http://control/<path>. The operator's commands and the lab use it.
func ControlClient(sock string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

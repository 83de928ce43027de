package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// The control socket (SPEC §5.5): the listener and its HTTP handler; the
// answers are built, and asked for, by outputs/control.

// serveControl serves the control socket, bound by control.Listen.
func (d *Daemon) serveControl(ctx context.Context) (func(), error) {
	path := d.cfg.Control
	ln, err := control.Listen(path)
	if err != nil {
		return nil, err
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
			writeError(w, http.StatusForbidden, control.ErrorBody{Error: "control socket: " + who +
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
		var out control.Modules
		err := d.Do(r.Context(), func(m *nodes.Mesh) { out = d.answers().Modules() })
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		mod := r.URL.Query().Get("module")
		var out *control.Explanation
		var notHere *control.ErrorBody
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			a := d.answers()
			if out = a.Explain(mod); out == nil {
				nh := a.NotHere(mod)
				notHere = &nh
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
		var notHere *control.ErrorBody
		err := d.Do(r.Context(), func(m *nodes.Mesh) {
			var here bool
			if out, here, derr = m.DOT("provisioner", mod); !here {
				nh := d.answers().NotHere(mod)
				notHere = &nh
			}
		})
		switch {
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, control.ErrorBody{Error: "the daemon's loop did not answer: " + err.Error()})
		case notHere != nil:
			writeError(w, http.StatusNotFound, *notHere)
		case derr != nil:
			writeError(w, http.StatusInternalServerError, control.ErrorBody{Error: "rendering the graph: " + derr.Error()})
		default:
			w.Header().Set("Content-Type", "text/vnd.graphviz")
			w.Write(out)
		}
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{}))
	return mux
}

// answers builds the control socket's answers from the mesh: call it on
// the loop.
func (d *Daemon) answers() control.Answers {
	return control.Answers{Node: d.cfg.Node, FillSocket: d.cfg.FillSocket, Mesh: d.mesh, State: d.moduleState}
}

// moduleState is what the module's report says (or will say at the end
// of the batch): the view's state, or failed when the fill socket failed
// or an item could not be recorded.
func (d *Daemon) moduleState(v *nodes.ModuleView) control.ModuleState {
	s := control.ModuleState{State: control.StateWord(v.State), Reason: v.Reason, Since: v.Since}
	said, ok := d.out.Said(v.Name)
	if ok && v.Ready() && said.Reason != "" {
		s.State, s.Reason, s.Fill = "failed", said.Reason, said.Failure
	}
	if ok && said.State == s.State && !said.Since.IsZero() {
		s.Since = said.Since
	}
	return s
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, control.ErrorBody{Error: "the daemon's loop did not answer: " + err.Error()})
		return
	}
	control.WriteJSON(w, http.StatusOK, v)
}

func writeError(w http.ResponseWriter, code int, e control.ErrorBody) { control.WriteJSON(w, code, e) }

// runCalls runs the calls Do handed the loop during the batch just
// stabilised, so the control socket never reads a graph half-changed.
func (d *Daemon) runCalls() {
	for _, c := range d.calls {
		c.fn()
		close(c.done)
	}
	d.calls = nil
}

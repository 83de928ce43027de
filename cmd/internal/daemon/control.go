package daemon

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The control socket (SPEC §5.5): its HTTP handler; the socket, and the
// answers, are outputs/control's.

// serveControl serves ControlHandler on the control socket.
func (d *Daemon) serveControl() (func(), error) {
	stop, err := control.Serve(d.cfg.Control, d.ControlHandler(), func(uid int, path string) {
		d.log.Warn().Int("peer_uid", uid).Str("path", path).Msg("control socket: request refused")
	})
	if err == nil {
		d.log.Info().Str("socket", d.cfg.Control).Msg("control socket answering")
	}
	return stop, err
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
		err := d.Do(r.Context(), func(m *nodes.NodeGraph) { out = d.answers().Modules() })
		writeJSON(w, out, err)
	})
	mux.HandleFunc("GET /v1/explain", func(w http.ResponseWriter, r *http.Request) {
		mod := r.URL.Query().Get("module")
		var out *control.Explanation
		var notHere *control.ErrorBody
		err := d.Do(r.Context(), func(m *nodes.NodeGraph) {
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
		err := d.Do(r.Context(), func(m *nodes.NodeGraph) {
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
	return control.Answers{Node: d.cfg.Node, FillSocket: d.cfg.FillSocket, Graph: d.mesh, State: d.moduleState}
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
// stabilized, so the control socket never reads a graph half-changed.
func (d *Daemon) runCalls() {
	for _, c := range d.calls {
		c.fn()
		close(c.done)
	}
	d.calls = nil
}

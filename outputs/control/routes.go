package control

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Source is what the control socket's routes need of the daemon.
type Source struct {
	// NotReady says why the daemon is not ready (none: it is).
	NotReady func() []string
	// OnLoop runs fn on the daemon's loop, between batches, with the
	// answers of that moment (a graph never read half-changed).
	OnLoop func(ctx context.Context, fn func(Answers)) error
	// Unhealthy, if set, says why the client cannot do its job though it
	// is ready (the fill socket not answering: FillHealth); /healthz
	// answers 503 for it as for NotReady's reasons, which it does not
	// join: the graph's answers still hold while it lasts.
	Unhealthy func() []string
	// Metrics serves /metrics.
	Metrics http.Handler
}

// Handler is the control socket's HTTP handler (SPEC §5.5; without the
// peer check, which needs the socket: Serve adds it): /healthz,
// /v1/modules, /v1/explain, /v1/graph.dot and /metrics.
func Handler(s Source) http.Handler {
	mux := http.NewServeMux()
	one := oneAtATime()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		not := s.NotReady()
		var bad []string
		if s.Unhealthy != nil {
			bad = s.Unhealthy()
		}
		if len(not)+len(bad) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			if len(not) > 0 {
				fmt.Fprintf(w, "not ready: %s\n", strings.Join(not, "; "))
			}
			if len(bad) > 0 {
				fmt.Fprintf(w, "unhealthy: %s\n", strings.Join(bad, "; "))
			}
			return
		}
		fmt.Fprintln(w, "ok: the bus is connected, the initial load is done and the fill socket answers")
	})
	mux.HandleFunc("GET /v1/modules", one(func(w http.ResponseWriter, r *http.Request) {
		var out Modules
		err := s.OnLoop(r.Context(), func(a Answers) { out = a.Modules() })
		out.NotReady = s.NotReady()
		out.fillLists()
		writeAnswer(w, out, err)
	}))
	mux.HandleFunc("GET /v1/explain", one(func(w http.ResponseWriter, r *http.Request) {
		mod, bad := moduleParam(r)
		if bad != nil {
			WriteJSON(w, http.StatusBadRequest, *bad)
			return
		}
		if mod == "" {
			WriteJSON(w, http.StatusBadRequest, ErrorBody{Error: "name a module: /v1/explain?module=M"})
			return
		}
		var out *Explanation
		var notHere *ErrorBody
		err := s.OnLoop(r.Context(), func(a Answers) {
			if out = a.Explain(mod); out == nil {
				nh := a.NotHere(mod)
				notHere = &nh
			}
		})
		if err == nil && notHere != nil {
			code, body := s.notHere(*notHere, mod)
			WriteJSON(w, code, body)
			return
		}
		if out != nil {
			out.NotReady = s.NotReady()
			out.fillLists()
		}
		writeAnswer(w, out, err)
	}))
	mux.HandleFunc("GET /v1/graph.dot", one(func(w http.ResponseWriter, r *http.Request) {
		mod, bad := moduleParam(r)
		if bad != nil {
			WriteJSON(w, http.StatusBadRequest, *bad)
			return
		}
		var out []byte
		var derr error
		var notHere *ErrorBody
		err := s.OnLoop(r.Context(), func(a Answers) {
			var here bool
			if out, here, derr = a.DOT(mod); !here {
				nh := a.NotHere(mod)
				notHere = &nh
			}
		})
		switch {
		case err != nil:
			WriteJSON(w, http.StatusServiceUnavailable, loopSilent(err))
		case notHere != nil:
			code, body := s.notHere(*notHere, mod)
			WriteJSON(w, code, body)
		case errors.As(derr, new(*TooBigToDraw)):
			WriteJSON(w, http.StatusRequestEntityTooLarge, ErrorBody{Error: derr.Error()})
		case derr != nil:
			WriteJSON(w, http.StatusInternalServerError, ErrorBody{Error: "rendering the graph: " + derr.Error()})
		default:
			if not := s.NotReady(); len(not) > 0 { // what it last knew, or nothing read yet: not an empty node
				out = append([]byte(NotReadyDOT+oneLine(strings.Join(not, "; "))+"\n"), out...)
			}
			w.Header().Set("Content-Type", "text/vnd.graphviz")
			w.Write(out)
		}
	}))
	mux.Handle("GET /metrics", s.Metrics)
	mux.HandleFunc("/", notServed)
	return mux
}

// oneAtATime wraps the routes that read the graph so that one of them is
// handled at a time, its answer built on the daemon's loop and encoded
// off it; the others wait, each until its own request ends (503). A
// call on the loop runs between two of its batches, which fill nothing
// meanwhile, and the answers are encoded on the client's one processor:
// ten callers of status looping at once held a change's fill 135 ms at
// the median on a 1,000-module node, 500 connections asking and never
// reading 13.5 s (an outside audit). The slot is held until the loop is
// done with the call, also when its caller gave up (OnLoop returns then).
func oneAtATime() func(http.HandlerFunc) http.HandlerFunc {
	slot := make(chan struct{}, 1)
	return func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			select {
			case slot <- struct{}{}:
			case <-r.Context().Done():
				WriteJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: "the control socket answered others until this request ended: " + r.Context().Err().Error()})
				return
			}
			defer func() { <-slot }()
			h(w, r)
		}
	}
}

// paths are the paths the control socket serves, as its errors name them.
var paths = []string{"/healthz", "/v1/modules", "/v1/explain?module=M", "/v1/graph.dot[?module=M]", "/metrics"}

// notServed answers what no route takes (a GET or HEAD route is more
// specific than "/", so only the rest reach it) as every other error is,
// an ErrorBody: 405 for a method other than GET on a path served, else 404,
// each naming the paths served; not the mux's plain text.
func notServed(w http.ResponseWriter, r *http.Request) {
	served := "the control socket serves " + strings.Join(paths, ", ")
	for _, p := range paths {
		if i := strings.IndexAny(p, "?["); i > 0 {
			p = p[:i]
		}
		if p == r.URL.Path {
			w.Header().Set("Allow", "GET, HEAD")
			WriteJSON(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method " + r.Method + " is not allowed on " + r.URL.Path +
				": the control socket answers GET (and HEAD) only"})
			return
		}
	}
	WriteJSON(w, http.StatusNotFound, ErrorBody{Error: "no such path " + r.URL.Path + ": " + served})
}

// NotReadyDOT leads the DOT of a client that is not ready, followed by
// why (the reasons of /healthz) and a newline: a DOT comment, so the graph
// still renders, and what `graph dot` says on stderr.
const NotReadyDOT = "// not ready: "

// writeAnswer writes v, or that the daemon's loop did not answer.
func writeAnswer(w http.ResponseWriter, v any, err error) {
	if err != nil {
		WriteJSON(w, http.StatusServiceUnavailable, loopSilent(err))
		return
	}
	WriteJSON(w, http.StatusOK, v)
}

func loopSilent(err error) ErrorBody {
	return ErrorBody{Error: "the daemon's loop did not answer: " + err.Error()}
}

// notHere is the answer for a module the graph does not hold: 404 saying
// which modules are here, or, while the client is not ready (the bus away,
// the initial load not done), 503 saying so: it cannot tell then whether
// the module is assigned to the node.
func (s Source) notHere(body ErrorBody, module string) (int, ErrorBody) {
	not := s.NotReady()
	if len(not) == 0 || module == "" {
		return http.StatusNotFound, body
	}
	body.Error = fmt.Sprintf("not ready: %s; cannot tell yet whether module %s is on node %s", strings.Join(not, "; "), module, body.Node)
	body.Modules = nil
	return http.StatusServiceUnavailable, body
}

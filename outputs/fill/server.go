package fill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"

	"github.com/rs/zerolog"
)

// MaxBody bounds a request body: 64 MiB of files as base64, plus slack.
const MaxBody = 64<<20*4/3 + 1<<20

// Server is the node-engine side of the fill socket (`mesh-fill`). It writes
// each file of a request atomically, sets mode, owner and group, and restarts
// or reloads the programs whose files changed. Requests run concurrently
// unless they name a same path: one waits for the other.
type Server struct {
	// Root, when set, confines every path: "/etc/x" is written at Root/etc/x.
	Root string
	// Command, when set, is run instead of systemctl, with the action
	// (restart or reload) and the unit appended.
	Command []string
	// Log receives what the server does; never file content.
	Log zerolog.Logger
	// OnRequest, when set, is called with each decoded request before it is
	// handled (for tests).
	OnRequest func(Request)
	// AllowUIDs, when set, admits only connections whose peer process runs
	// as one of these uids (SO_PEERCRED, read as each connection is
	// accepted); any other is answered 403 and nothing of it is written.
	// Empty: the socket's mode (0660) alone decides who may connect.
	AllowUIDs []int
	// SyncFSFrom is how many files a request must write for them to be made
	// durable with syncfs, once per filesystem before the renames and once
	// after, rather than with an fsync per file and per directory: far
	// faster for many files (a cold start's 10,000 files: 0.46–0.66 s
	// against 0.89–1.61 s on an ext4 virtual disk), but it also flushes
	// whatever else is dirty on that filesystem. 0 means DefaultSyncFSFrom;
	// negative, never. Linux only; elsewhere every file is fsynced.
	SyncFSFrom int

	busy pathLocks
	// write, when set, writes a request's files instead of writeAll (for a
	// benchmark's baseline).
	write func(root *os.Root, steps []step) error
}

// DefaultSyncFSFrom is Server.SyncFSFrom's default: a change of a few
// files keeps its fsyncs, which wait on those files alone, while a start,
// a refill or a module's first fill flushes its filesystem once.
const DefaultSyncFSFrom = 32

func (s *Server) syncFSFrom() int {
	if s.SyncFSFrom == 0 {
		return DefaultSyncFSFrom
	}
	return s.SyncFSFrom
}

// Handler serves POST /v1/fill.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serveFill)
}

func (s *Server) serveFill(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != FillPath {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such route %s; the fill socket serves POST %s", r.URL.Path, FillPath))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use POST", r.Method))
		return
	}
	var req Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody)).Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, fmt.Sprintf("decoding the request: %v", err))
		return
	}
	if s.OnRequest != nil {
		s.OnRequest(req)
	}

	paths := make([]string, len(req.Files))
	for i, f := range req.Files {
		paths[i] = path.Clean(f.Path)
	}
	s.busy.lock(paths)
	defer s.busy.unlock(paths)
	resp, err := s.fill(r.Context(), req)
	if err != nil {
		var ref *refusal
		status := http.StatusInternalServerError
		if errors.As(err, &ref) {
			status = http.StatusBadRequest
		}
		s.Log.Warn().Str("module", req.Module).Int("status", status).Err(err).Msg("fill refused")
		writeError(w, status, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// fill carries out one request: validate and plan every file, write the
// changed ones, then run the programs.
func (s *Server) fill(ctx context.Context, req Request) (Response, error) {
	steps, err := s.plan(req)
	if err != nil {
		return Response{}, fmt.Errorf("module %s: %w", req.Module, err)
	}
	root, err := s.openRoot()
	if err != nil {
		return Response{}, fmt.Errorf("module %s: %w", req.Module, err)
	}
	defer root.Close()

	if s.write != nil {
		err = s.write(root, steps)
	} else {
		err = writeAll(root, steps, s.syncFSFrom())
	}
	if err != nil {
		return Response{}, fmt.Errorf("module %s: %w", req.Module, err)
	}
	resp := Response{Files: make([]FileResult, 0, len(steps))}
	for _, st := range steps {
		s.Log.Info().Str("module", req.Module).Str("path", st.file.Path).Str("form", st.file.Form).
			Str("action", st.action).Msg("file filled")
		resp.Files = append(resp.Files, FileResult{Path: st.file.Path, Action: st.action, Digest: digest(st.want)})
	}

	progs := programs(steps)
	if len(progs) > 0 {
		resp.Programs = progs
		resp.Program = &resp.Programs[0]
	}
	if err := s.runPrograms(ctx, req.Module, progs); err != nil {
		return Response{}, fmt.Errorf("module %s: files filled, but %w", req.Module, err)
	}
	return resp, nil
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: msg})
}

package fill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// MaxBody bounds a request body: 64 MiB of files as base64, plus slack.
const MaxBody = 64<<20*4/3 + 1<<20

// MaxFiles bounds the files one request names. A body of MaxBody holds
// some 2.5 million files of a short path and no content, each about 2 KB
// of memory while the request is processed (its step, lock, ledger and
// answer entries): 200,000 such files took 370 MB, so a request or a
// careless plan could exhaust the machine's memory; and the client reads
// an answer of at most 16 MiB, about 100,000 files' results. Five times a
// cold start's whole node (10,000 files) is far more than a module has.
const MaxFiles = 50_000

// DefaultReadTimeout is far more than a body of MaxBody takes over a unix
// socket; DefaultIdleTimeout outlasts the client's refill (1 min), so the
// connections it keeps are rarely closed under it (when one is, the
// request is sent again over a new one: Client.do).
const (
	DefaultReadTimeout = 2 * time.Minute
	DefaultIdleTimeout = 10 * time.Minute
)

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
	// Allow, when set, are the globs of the paths a request may name (`*`
	// one path element, `**` any depth, matched against the path as the
	// request names it, so below Root, and, without Root, against where
	// its parents' symlinks lead it too); a path outside them is refused
	// (403) and nothing of the request written. Empty: every path.
	Allow []string
	// AllowUnits, when set, are the globs of the units a request may
	// restart or reload; another is refused (403). Empty: every unit.
	AllowUnits []string
	// StateDir, when set, is where what was written for which module is
	// kept, so a restart keeps removal and ownership exact (SPEC §4.3
	// (r2)), and the programs not yet run (pending.go); read by Serve,
	// which holds it locked while it serves. Empty: kept in memory only.
	StateDir string
	// ReadTimeout bounds reading one request, its body included, and
	// IdleTimeout how long a kept connection may wait for its next one
	// (0: DefaultReadTimeout, DefaultIdleTimeout). Without them a peer
	// that stopped halfway through a body, or a client that leaks its
	// connections, held a goroutine and a descriptor each for ever.
	ReadTimeout, IdleTimeout time.Duration
	// MaxRequests bounds the requests processed at once (0:
	// DefaultMaxRequests); those over it wait (slots.go).
	MaxRequests int
	// MaxConns bounds the connections held at once, idle, waiting for a
	// slot or being read (0: DefaultMaxConns); one over it takes the place
	// of an idle one, or is answered 503 and closed at once when none is
	// (conncap.go).
	MaxConns int

	busy  pathLocks
	state ledger
	// stateAt is where the state dir is, as a request's path would name
	// it; "" when none leads there (ownDir). Set by Serve.
	stateAt string
	// seedDigests are the digests of seed files kept (seeddigest.go).
	seedDigests digestCache
	// write, when set, writes a request's files instead of writeAll (for a
	// benchmark's baseline, and for a test to act before the write).
	write func(ds *dirs, steps []step) error
	// aroundPending, when set (by a test), is called in place of running
	// the programs found pending at start, with that run to call.
	aroundPending func(run func())

	// rootDir is the root (Root, or "/"), held open by Serve: every
	// request works in it (holdRoot); nil when served without Serve.
	rootDir *dir
	// connsHeld is how many connections the server holds (conncap.go).
	connsHeld atomic.Int64

	slotsOnce sync.Once
	slots     chan struct{} // one per request processed (admit)
	// waiting, when set (by a test), is called as a request starts to
	// wait for a slot.
	waiting func()
	// dirLimit is the most directories one request may work in (0: no
	// limit); Serve sets it from the open-file limit (dirlimit.go).
	dirLimit int
	// bodyBytes is how many bytes of request bodies are held (body.go),
	// bodyBytesMax, when set (by a test), their bound in place of
	// bodyBudget's.
	bodyBytes    atomic.Int64
	bodyBytesMax int64
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

// Handler serves POST /v1/fill and DELETE /v1/modules/<module>.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.route)
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	want := http.MethodPost
	switch {
	case r.URL.Path == FillPath:
	case strings.HasPrefix(r.URL.Path, ModulesPath):
		want = http.MethodDelete
	default:
		// Most often the client's operator commands given this socket
		// (it sits beside the control socket): say which one they want.
		writeError(w, http.StatusNotFound, fmt.Sprintf("no such route %s: this is a fill socket (mesh-fill), which serves POST %s and DELETE %s<module>; "+
			"status, graph explain and graph dot ask the provisioner client's control socket: name it with --control", r.URL.Path, FillPath, ModulesPath))
		return
	}
	if r.Method != want {
		w.Header().Set("Allow", want)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use %s", r.Method, want))
		return
	}
	if want == http.MethodDelete {
		release, ok := s.admit(w, r)
		if !ok {
			return
		}
		defer release()
		s.serveDelete(w, r, strings.TrimPrefix(r.URL.Path, ModulesPath))
		return
	}
	if r.ContentLength > MaxBody { // said at once, nothing of it read
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes, over %d bytes", r.ContentLength, int64(MaxBody)))
		return
	}
	// Read whole before a slot is taken: a peer sending it slowly holds
	// no slot (body.go). Read to its end, the server then watches the
	// connection, and the request's context ends if the client goes
	// (clientGone).
	body, letGo, err := s.readBody(w, r)
	if err != nil {
		s.answerBody(w, err)
		return
	}
	defer letGo()
	release, ok := s.admit(w, r)
	if !ok {
		return
	}
	defer release()
	s.serveFill(w, r, body, letGo)
}

// serveFill decodes body, a fill's, lets go of it (letGo) and carries
// the request out.
func (s *Server) serveFill(w http.ResponseWriter, r *http.Request, body io.Reader, letGo func()) {
	req, err := decodeRequest(body) // one file at a time, at most MaxFiles
	letGo()
	if err != nil {
		if ref := (*refusal)(nil); errors.As(err, &ref) {
			s.answerError(w, loggedName(req.Module), err)
		} else {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("decoding the request: %v", err))
		}
		return
	}
	if err := checkModule(req.Module); err != nil { // before its name goes anywhere: a lock, a log line
		s.answerError(w, loggedName(req.Module), err)
		return
	}
	if s.OnRequest != nil {
		s.OnRequest(req)
	}

	// where they lead: two names of one file are one path. A path that is
	// none (relative, a NUL, ...) takes no lock: its request is refused
	// before anything is written, and, as a lock, it could be another's,
	// a module's ("\x00module m": m's own request waited for itself).
	paths := make([]string, 0, len(req.Files))
	for _, f := range req.Files {
		if at, err := s.locate(path.Clean(f.Path)); err == nil {
			paths = append(paths, at)
		}
	}
	defer s.lock(req.Module, paths, req.Whole)()
	if s.clientGone(r, req.Module) {
		return
	}
	resp, err := s.fill(r.Context(), req)
	if err != nil {
		s.answerError(w, req.Module, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, module string) {
	// Only the empty name is refused: a module whose name a fill would
	// refuse holds nothing here, and is answered so (200, no files), not
	// refused, so the client's removal is done and not tried at every tick.
	if module == "" {
		s.answerError(w, module, refuse("the request names no module"))
		return
	}
	defer s.lock(module, nil, true)()
	if s.clientGone(r, module) {
		return
	}
	files, progs, err := s.removeModule(r.Context(), module)
	if err != nil {
		s.answerError(w, module, fmt.Errorf("module %s: %w", module, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(DeleteResponse{Files: files, Programs: progs})
}

// lock takes the module (one request of a module at a time, so what it
// holds changes under no other) and then the paths its request names and,
// when it may remove, the paths it holds; unlock gives them back. Every
// request takes its module first and its paths all at once, so none waits
// for a module holding paths.
func (s *Server) lock(module string, paths []string, removes bool) (unlock func()) {
	mod := []string{"\x00module " + module} // every path locked is absolute, and holds no NUL
	s.busy.lock(mod)
	if removes {
		for p := range s.state.files(module) {
			paths = append(paths, p)
		}
	}
	s.busy.lock(paths)
	return func() {
		s.busy.unlock(paths)
		s.busy.unlock(mod)
	}
}

func (s *Server) answerError(w http.ResponseWriter, module string, err error) {
	status := http.StatusInternalServerError
	var ref *refusal
	if errors.As(err, &ref) {
		status = ref.status
	}
	// a request refused (4xx) is the caller's to mend, a warning; one
	// mesh-fill failed to carry out (5xx: a write, its root, its state
	// dir, a program) is its own, an error an operator is alerted to
	if status >= http.StatusInternalServerError {
		err = hinted(err)
		s.Log.Error().Str("module", module).Int("status", status).Err(err).Msg("fill failed")
	} else {
		s.Log.Warn().Str("module", module).Int("status", status).Err(err).Msg("fill refused")
	}
	body := errorBody{Error: err.Error()}
	if ref != nil {
		body.Path, body.Holder, body.Key = ref.path, ref.holder, ref.key
	}
	if pf := (*programsFailed)(nil); errors.As(err, &pf) {
		body.ProgramFailed = true
	}
	writeJSONError(w, status, body)
}

// fill carries out one request: validate and plan every file, refuse what
// another module holds, write the changed ones, remove what a whole
// request no longer names, then run the programs.
func (s *Server) fill(ctx context.Context, req Request) (Response, error) {
	fail := func(err error) (Response, error) { return Response{}, fmt.Errorf("module %s: %w", req.Module, err) }
	var drop map[string]held
	if req.Whole {
		drop = s.state.files(req.Module) // those named are taken out below
	}
	if err := s.checkDirs(req.Files, drop); err != nil {
		return fail(err)
	}
	steps, ds, err := s.plan(req)
	if err != nil {
		return fail(err)
	}
	defer ds.close() // what plan checked is what is written, removed
	if err := s.state.checkOwners(req.Module, steps); err != nil {
		return fail(err)
	}

	named := make(map[string]held, len(steps)) // by where each path leads
	for _, st := range steps {
		named[st.t.at()] = held{Path: st.file.Path, Form: st.file.Form, Keys: st.keys, OnChange: heldProgram(st.file.OnChange)}
	}
	for p := range named {
		delete(drop, p)
	}
	blocks, gone, err := s.removals(ds, req.Module, drop)
	if err != nil {
		return fail(err)
	}
	all := append(steps[:len(steps):len(steps)], blocks...)
	// a file removed, or a block taken out, is a change on disk its program is told of
	progs := programs(slices.Concat(steps, s.allowedSteps(req.Module, slices.Clone(blocks)), s.removedSteps(req.Module, drop, gone)))
	if req.Whole {
		// the module's declaration is this request: a program an earlier
		// request left pending for a unit it no longer names is not owed
		// any more (else one that fails, a unit renamed or gone, failed
		// every request of the module for ever)
		for _, p := range s.state.forgetPending(req.Module, progs) {
			s.Log.Warn().Str("module", req.Module).Str("unit", p.Unit).Str("action", p.Action).
				Msg("program pending from an earlier request dropped: the module no longer names its unit")
		}
	}
	saved, err := s.state.hold(req.Module, named) // before the first rename, as intend
	if err != nil {
		return fail(fmt.Errorf("nothing written: %w", err))
	}
	pending, err := s.state.intend(req.Module, progs) // before the first rename (pending.go)
	if err != nil {
		return fail(err)
	}

	if s.write != nil {
		err = s.write(ds, all)
	} else {
		err = writeAll(ds, all, s.syncFSFrom())
	}
	if err == nil {
		err = removeFiles(gone)
	}
	if err != nil {
		// some may be written: the module holds them (hold saved them),
		// and still what it held
		if !saved {
			if rerr := s.state.record(req.Module, named, false); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return fail(err)
	}
	// what hold saved is the module's declaration now, unless a whole
	// request lets go of paths: not saved twice
	if !saved || len(drop) > 0 {
		if err := s.state.record(req.Module, named, req.Whole); err != nil {
			return fail(fmt.Errorf("files filled, but %w", err))
		}
	}
	if req.Whole { // the module's every path is locked: none of its temp files is being written
		s.sweepBeside(ds, req.Module, append(slices.Collect(maps.Keys(named)), slices.Collect(maps.Keys(drop))...))
	}

	resp := Response{Files: make([]FileResult, 0, len(all)+len(gone))}
	for _, st := range steps {
		// a file changed on disk is said; one found as it should be (each
		// refill finds nearly all so) is for debugging
		lvl := zerolog.InfoLevel
		if !st.write {
			lvl = zerolog.DebugLevel
		}
		s.Log.WithLevel(lvl).Str("module", req.Module).Str("path", st.file.Path).Str("form", st.file.Form).
			Str("action", st.action).Msg("file filled")
		sum := st.t.digest // a seed kept, read for its digest alone
		if sum == "" || st.action != ActionKept {
			sum = digest(st.want)
		}
		resp.Files = append(resp.Files, FileResult{Path: st.file.Path, Action: st.action, Digest: sum})
	}
	resp.Files = append(resp.Files, s.removed(req.Module, blocks, gone)...)

	progs = mergePrograms(progs, pending) // and those of the module's earlier requests not run
	if len(progs) > 0 {
		resp.Programs = progs
		resp.Program = headline(resp.Programs)
	}
	failed, err := s.runPrograms(ctx, req.Module, progs)
	if rerr := s.state.ran(req.Module, failed); rerr != nil {
		s.Log.Error().Str("module", req.Module).Err(rerr).Msg("programs run, but still pending: they run again at the next start")
	}
	if err != nil {
		return fail(fmt.Errorf("files filled, but %w", &programsFailed{err}))
	}
	return resp, nil
}

// loggedName is module as a log line may hold it: its first 40 bytes,
// quoted, when it is longer than any module's name may be.
func loggedName(module string) string {
	if len(module) > MaxModuleBytes {
		return fmt.Sprintf("%.40q…", module)
	}
	return module
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSONError(w, status, errorBody{Error: msg})
}

func writeJSONError(w http.ResponseWriter, status int, body errorBody) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// clientGone says, once the module's lock is taken, whether the request's
// client has gone (its connection closed) meanwhile; such a request is
// not applied. The client never learns what it did, and one started
// again sends what it wants: a DELETE it sent since, applied first, would
// otherwise be undone by the stale fill, bringing back the files of a
// module no longer on the node for good (chaos seed 59421), and a stale
// DELETE would remove what a newer fill wrote.
func (s *Server) clientGone(r *http.Request, module string) bool {
	if r.Context().Err() == nil {
		return false
	}
	s.Log.Warn().Str("module", module).Str("request", r.Method+" "+r.URL.Path).Msg("the client went before its request was applied: not applied")
	return true
}

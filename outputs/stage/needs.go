package stage

import (
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// queueNeeds queues the view's needs for the next FlushNeeds, unless
// they are those last written (and not forced: a full send, a retry).
// A lean view's needs are summed where they are, and listed only when
// queued.
func (s *Stage) queueNeeds(views Views, v *nodes.ModuleView, mo *moduleOut, force bool) {
	if v.NeedsUnknown {
		// Its templates not read, or the module failed before its files
		// were wired: its needs are not known, and stay as written. A
		// state queued before is dropped (listed from the graph at the
		// flush, it would be none: every need deleted); they are synced
		// again once its files are wired. The placeholders its plan makes
		// impossible are written failed, and those written so before that
		// its plan no longer fails are deleted (queueFailed).
		delete(s.pendingNeeds, v.Name)
		mo.needsKnown = false
		s.queueFailed(v, mo, force)
		return
	}
	lv, lean := views.(leanViews)
	lean = lean && v.Needs == nil
	var sum uint64
	if lean {
		sum = lv.NeedsSum(v.Name, s.seed)
	} else {
		sum = nodes.SumNeeds(s.seed, v.Needs)
	}
	if !force && mo.needsKnown && sum == mo.needsWritten {
		delete(s.pendingNeeds, v.Name) // a state queued meanwhile is not the view's any more
		return
	}
	if len(s.pendingNeeds) == 0 {
		s.needsSince = time.Now()
	}
	q := queuedNeeds{list: v.Needs, n: len(v.Needs)}
	if lean {
		// Listed from the graph at the flush, a few modules at a time: a
		// cold start's lists (a 100,000-file node's 509,000 needs), held
		// from its first Send until its fills were all back, were ~35 MB
		// of its peak (issue 20).
		s.lean, q.lean, q.n = lv, true, lv.NeedsLen(v.Name)
	}
	s.pendingNeeds[v.Name] = q
	mo.needsQueued = sum
}

// queueFailed queues the needs that fail module v at plan level
// (ModuleView.FailedNeeds) for the next flush, unless they are those last
// written (and not forced): written failed, the module's other needs left
// as written, and those written failed before that are not now deleted.
func (s *Stage) queueFailed(v *nodes.ModuleView, mo *moduleOut, force bool) {
	same := slices.EqualFunc(v.FailedNeeds, mo.planFailed, func(a, b nodes.NeedView) bool {
		return a.Kind == b.Kind && a.Name == b.Name && a.Why == b.Why
	}) && maps.Equal(v.NamedNeeds, mo.planNamed)
	if same && (!force || len(v.FailedNeeds) == 0 && v.NamedNeeds == nil) {
		return
	}
	if len(s.pendingNeeds) == 0 {
		s.needsSince = time.Now()
	}
	s.pendingNeeds[v.Name] = queuedNeeds{list: v.FailedNeeds, n: len(v.FailedNeeds), some: true, named: v.NamedNeeds}
}

// queuedNeeds is one module's needs queued for the next flush: its view's
// list, or (lean) to be listed from the graph then, n of them. some: the
// list is the needs failing it at plan level alone (queueFailed), and
// named the placeholders its templates name (nil: not known).
type queuedNeeds struct {
	list  []nodes.NeedView
	lean  bool
	some  bool
	n     int
	named map[nodes.Placeholder]bool
}

// listed is the needs to write: a lean module's as the graph has them now
// (stable: the flush runs after a stabilization), its sum taken again with
// them.
func (s *Stage) listed(module string, q queuedNeeds) []nodes.NeedView {
	if !q.lean || s.lean == nil {
		return q.list
	}
	if mo := s.modules[module]; mo != nil {
		mo.needsQueued = s.lean.NeedsSum(module, s.seed)
	}
	return s.lean.Needs(module)
}

type leanViews interface {
	ViewLean(module string) *nodes.ModuleView
	Needs(module string) []nodes.NeedView
	NeedsLen(module string) int
	NeedsSum(module string, seed maphash.Seed) uint64
}

// viewOf is module's view, lean when views can: its needs are listed
// only when it waits or fails (its report names the needs not met).
func viewOf(views Views, module string) *nodes.ModuleView {
	lv, ok := views.(leanViews)
	if !ok {
		return views.View(module)
	}
	v := lv.ViewLean(module)
	if v != nil && v.State != graph.Ready { // a failed report lists what else waits (StillWaiting)
		v.Needs = lv.Needs(module)
	}
	return v
}

// needsDelay bounds how long needs wait to be written while input keeps
// coming (a need moving waiting → met within one burst is written once).
const needsDelay = time.Second

// FlushNeeds writes the needs of the modules sent since the last flush,
// all modules' puts in flight together. Unless forced, it waits while
// Config.Busy says more input is queued (it will change the same needs
// again), up to needsDelay, and while something is on its way (awaiting):
// a cold start writes each need once, in its settled state, instead of
// once per batch, and after its files and reports.
func (s *Stage) FlushNeeds(ctx context.Context, force bool) {
	if len(s.pendingNeeds) == 0 {
		return
	}
	if !force && (s.awaiting() && s.manyNeeds() || s.cfg.Busy() && time.Since(s.needsSince) < needsDelay) {
		return
	}
	// The needs go in chunks of about needsChunk: a cold start's tens of
	// thousands, all in the bus's form at once, were part of the client's
	// peak of memory, and the publisher keeps no more puts than that in
	// flight anyway.
	chunk, n := map[string][]report.Need{}, 0
	write := func() {
		errs := s.cfg.Pub.NeedsAll(ctx, chunk)
		for module := range chunk {
			if mo := s.modules[module]; mo != nil && errs[module] == nil {
				mo.needsWritten, mo.needsKnown = mo.needsQueued, true
				mo.planFailed, mo.planNamed = nil, nil // its needs are exactly its view's now
			}
		}
		for module, err := range errs {
			if mo := s.modules[module]; mo != nil {
				mo.retry, mo.needsKnown = true, false
			}
			s.cfg.Log.Warn().Err(err).Str("module", module).Msg("needs not written")
		}
		clear(chunk)
		n = 0
	}
	buf := s.needBuf[:0] // the chunk's needs, in one array kept for the next flush
	var some []string    // modules whose needs failing them at plan level are queued (queueFailed)
	for _, module := range slices.Sorted(maps.Keys(s.pendingNeeds)) {
		if s.modules[module] == nil {
			continue // gone since (Removed deletes its needs)
		}
		if s.heldByDaemon(module) {
			s.keepHeld(module, false) // queued again, from its view, once let go
			continue
		}
		if s.pendingNeeds[module].some {
			some = append(some, module)
			continue
		}
		needs := s.listed(module, s.pendingNeeds[module])
		at := len(buf) // (a chunk's earlier slices keep the array they were made on when it grows)
		buf = appendNeeds(buf, s.cfg.Node, module, needs)
		chunk[module] = buf[at:len(buf):len(buf)]
		if n += len(needs); n >= needsChunk {
			write()
			buf = buf[:0]
		}
	}
	if len(chunk) > 0 {
		write()
	}
	s.writeFailed(ctx, some)
	clear(buf[:cap(buf)]) // no strings held between flushes
	if cap(buf) <= 1024 { // a change's needs; not a cold start's
		s.needBuf = buf[:0]
	}
	clear(s.pendingNeeds)
}

// writeFailed writes the needs queued by queueFailed for modules: each
// failed, and, when what their templates name is known, those no template
// names deleted (also one the last run wrote: a placeholder dropped while
// the client was down); the modules' other needs are left as written (a
// need that no longer fails while the module still does keeps its state
// as last written: what it is is not known until the module's files are
// wired). A write that failed is tried again (mo.retry).
func (s *Stage) writeFailed(ctx context.Context, modules []string) {
	if len(modules) == 0 {
		return
	}
	put, named := map[string][]report.Need{}, map[string]map[string]bool{}
	for _, module := range modules {
		q := s.pendingNeeds[module]
		put[module] = appendNeeds(nil, s.cfg.Node, module, q.list)
		if q.named != nil {
			keep := make(map[string]bool, len(q.named))
			for ph := range q.named {
				keep[spec.EncodeKey(string(ph.Kind), ph.Name)] = true
			}
			named[module] = keep
		}
	}
	errs := s.cfg.Pub.NeedsSome(ctx, put, named)
	for _, module := range modules {
		mo, q := s.modules[module], s.pendingNeeds[module]
		if err := errs[module]; err != nil {
			mo.retry = true
			mo.planFailed, mo.planNamed = nil, nil // written again at the retry
			s.cfg.Log.Warn().Err(err).Str("module", module).Msg("needs not written")
			continue
		}
		mo.planFailed, mo.planNamed = q.list, q.named
	}
}

// needsChunk is about how many needs FlushNeeds hands the publisher at once.
const needsChunk = 2000

// manyNeedsAt is how many needs pending make a flush wait for what is on
// its way (awaiting): a cold start's, which holds the loop for as long as
// their acks take. Fewer go at once, as they always did: a module's needs
// are on the bus by the time its report is (a variable for a test).
var manyNeedsAt = needsChunk

// manyNeeds says the needs pending are as many as manyNeedsAt.
func (s *Stage) manyNeeds() bool {
	n := 0
	for _, q := range s.pendingNeeds {
		if n += q.n; n >= manyNeedsAt {
			return true
		}
	}
	return false
}

// awaiting says many needs (manyNeeds) wait, however long, for what is on its way:
// an answer that may move them (Config.Awaiting: a cold start's vault
// answers turn its secret needs met), or a fill or DELETE request in
// flight. A flush holds the daemon's loop until the bus has acknowledged
// every put, tens of thousands at a cold start, and meanwhile no request
// that comes back is taken in (reported, its module's next one sent):
// flushed while a cold start's fills were in flight it held them up a
// second and more at 10,000 files (issue 20). They go once the last
// answer is taken in (the Send of that batch); the daemon's retry tick
// forces them, so they wait no longer than that for an answer that does
// not come.
func (s *Stage) awaiting() bool {
	return len(s.flying) > 0 || s.cfg.Awaiting()
}

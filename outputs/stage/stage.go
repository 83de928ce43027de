package stage

import (
	"context"
	"crypto/rand"
	"errors"
	"hash/maphash"
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// Config is what a Stage writes to and how.
type Config struct {
	Node string
	Fill *fill.Client
	Pub  *report.Publisher
	Key  []byte // keys the digests of secret-bearing files in reports; nil: a random one
	// QuotesSecret says whether a text holds a secret the client holds
	// (nodes.NodeGraph.QuotesSecret; nil: none is looked for): the
	// node-engine's error text is then withheld (failure.go). Called on
	// the loop.
	QuotesSecret func(text string) bool
	FillGap      time.Duration // a module filled less than this ago is held (0: never)
	Log          zerolog.Logger
	// Busy says more input is queued: needs then wait, up to needsDelay,
	// for it to settle. Nil: never busy.
	Busy func() bool
	// Awaiting says an answer that may move the needs is on its way (a
	// vault ask, a templates archive's fetch): needs then wait for it, as
	// they wait for the requests in flight (FlushNeeds). Nil: never.
	Awaiting func() bool
	// OnFill, if set, is told of each request to the fill socket's latency
	// and outcome (a fill, or a module's removal: a node-engine that does
	// not answer removals is as unhealthy as one that does not fill); it
	// is called from the worker that sent the request.
	OnFill func(took time.Duration, err error)
	// OnFillSent, if set, is told as each such request is sent, before
	// OnFill is told its outcome (a request out long with no answer says a
	// node-engine that hangs: control.FillHealth).
	OnFillSent func()
	// OnState, if set, is told when a module's state changes, as soon as
	// its report is written ("" before the first and once it has left),
	// so a count by state never lags the bucket by a batch.
	OnState func(was, now string)
	// Removals is a file where the modules whose removal the node-engine
	// has not answered are kept, so a restart still removes their files;
	// "": kept in memory alone.
	Removals string
	// KeptPlans is a file where the bindings and offers of assignments
	// whose value does not parse are kept (nodes.KeptPlan), so a restart
	// still binds them (keptplans.go); "": kept in memory alone.
	KeptPlans string
	// Retry is the daemon's retry tick: a request the node-engine refused
	// (a 4xx), or whose program failed (a 5xx saying so), goes again
	// unchanged no sooner than this, doubling up to refusedMax at each
	// failure in a row (refused.go). 0: 5 s.
	Retry time.Duration
	// Held says the daemon holds module: nothing of it goes out (daemonhold.go). Nil: none.
	Held func(module string) bool
}

// Views gives a module's view after a stabilization, nil when the module
// is not on this node; *nodes.NodeGraph is one.
type Views interface {
	View(module string) *nodes.ModuleView
}

// Stage is one node's output stage. Not safe for concurrent use: the
// daemon's loop goroutine owns it.
type Stage struct {
	cfg Config

	modules         map[string]*moduleOut        // what was last filled and said, by module
	pendingNeeds    map[string]queuedNeeds       // module → its needs, to write at the next flush
	lean            leanViews                    // the views of the last Send, when lean: queued needs are listed from it at the flush
	needsSince      time.Time                    // when the oldest pending needs were queued
	swept           bool                         // keys of modules gone were deleted (Sweep)
	readBackFrom    time.Time                    // when the first fill began to wait for the read-back (ReadingBack)
	held            map[string]time.Time         // module → when its held changes go out (Config.FillGap)
	holdTimer       *time.Timer                  // wakes the loop for the earliest of held
	holdAt          time.Time                    // when holdTimer fires; zero: not armed
	removing        map[string]bool              // modules whose removal the node-engine has not answered yet (Config.Removals)
	keptBefore      map[string]nodes.KeptPlan    // what Config.KeptPlans held at start, until handed over (KeptPlansBefore)
	keptSaved       []byte                       // what Config.KeptPlans holds
	keptWant        []byte                       // what it is to hold (KeepPlans)
	keptUnsaved     bool                         // keptWant is not written yet: tried again at each tick
	removalsOld     bool                         // Config.Removals does not hold removing: tried again at each tick
	answered        map[string]bool              // modules whose removal the node-engine answered, until back (Sweep)
	before          map[string][]report.File     // module not prepared yet → its last run's report's files (Sweep; moduleOut.before)
	sinceBefore     map[string]time.Time         // module not prepared yet → its last run's report's at (Sweep; moduleOut.sinceBefore)
	saidGone        map[string]bool              // modules prov.changed said gone, until back (Gone)
	filesBefore     map[string][]report.File     // module → the files of its report the start's Sweeps read (HeldBefore)
	heldTaken       bool                         // HeldBefore was handed over: later Sweeps keep no such map
	itemsBefore     map[string]map[string][]byte // module → collection → the item the start's Sweeps read (ItemsBefore)
	itemsTaken      bool                         // ItemsBefore was handed over: later Sweeps keep no such map
	readBack        map[string]bool              // the buckets the start's Sweeps read whole, until handed over (ReadBack)
	holders         map[string]string            // path → the module a 409 said holds it, until taken (Holders)
	needBuf         []report.Need                // FlushNeeds' needs in the bus's form, kept for the next flush (issue 20)
	seed            maphash.Seed                 // needsSum's
	deleteWait      map[string]*refusal          // module → the wait of its removal the node-engine refused (remove.go)
	fillDown        bool                         // the last request answered or not found no one at the socket: refusals are forgotten once one is answered (refused.go)
	mayHoldRefusals bool                         // a module may hold a refusal (refused.go): set as one is made, cleared when a walk finds none
	daemonHeld      map[string]bool              // module the daemon holds → sent whole once let go (daemonhold.go)
	now             func() time.Time             // time.Now; a test's clock for the refusals' waits
	flights                                      // requests off the loop
}

// New makes a stage.
func New(cfg Config) (*Stage, error) {
	if cfg.Key == nil {
		cfg.Key = make([]byte, 32)
		if _, err := rand.Read(cfg.Key); err != nil {
			return nil, err
		}
	}
	if cfg.Busy == nil {
		cfg.Busy = func() bool { return false }
	}
	if cfg.Awaiting == nil {
		cfg.Awaiting = func() bool { return false }
	}
	if cfg.Retry <= 0 {
		cfg.Retry = defaultRetry
	}
	s := &Stage{cfg: cfg, modules: map[string]*moduleOut{}, pendingNeeds: map[string]queuedNeeds{},
		held: map[string]time.Time{}, removing: map[string]bool{}, flights: newFlights(), seed: maphash.MakeSeed(), now: time.Now}
	s.loadRemovals()
	s.loadKeptPlans()
	return s, nil
}

// outJob is one module's output after a stabilization: its view, and the
// fill request to send (nil when no file of it is to be sent).
type outJob struct {
	v         *nodes.ModuleView
	mo        *moduleOut
	syncItems bool // its items go to the publisher (moduleOut.itemsDirty)
	req       *fill.Request
	sent      map[string]*nodes.FileValue // path → what the request carries
	// deferred: a fill is due but no worker is free (req nil; its values
	// let go of their bytes); whole: it is to carry every file.
	deferred, whole bool
	resp            fill.Response
	err             error
}

// Send brings the named modules' needs, items, files and reports in line
// with their views. With all set, every file is sent again (start,
// reconnect, refill) and nothing is held; otherwise held modules whose gap
// has passed are sent too, and a module filled less than Config.FillGap
// ago is held. Fill requests go off the loop (flight.go): a module's
// report is written when its fill is back (Land, then the next Send); a
// module whose request is in flight is sent again once it is back. The
// modules Land took in since the last Send are sent (when touched
// meanwhile) and reported here too.
func (s *Stage) Send(ctx context.Context, views Views, names []string, all bool) {
	if all {
		clear(s.held)
		s.holdAll()
	} else {
		names = s.dueRefused(s.dueHeld(names, time.Now()))
	}
	s.send(ctx, views, names, all)
	if all {
		s.retryRemovals(ctx, true) // a full send is everything, removals too (a restart's)
	} else {
		s.dueRemovals(ctx)
	}
	s.armHold()
}

func (s *Stage) send(ctx context.Context, views Views, names []string, all bool) {
	began := time.Now()
	s.takeLost()
	slots := s.free()
	names = s.letHeldGo(names)
	// Only reports to write, and more requests coming back soon: they
	// wait, unless a deferred module can go now (then they still wait).
	holding := !all && len(names) == 0 && s.holdReports(began)
	if holding && (len(s.deferred) == 0 || slots <= 0) {
		return
	}
	back := s.landed
	if holding {
		back = nil
	} else {
		s.landed, s.reportsDue = map[string]landed{}, time.Time{}
	}
	for name, l := range back {
		if l.again && !slices.Contains(names, name) {
			names = append(names, name) // touched while in flight
		}
	}
	names = s.holdOff(names, back, all) // nothing goes out of those the daemon holds
	names = s.undefer(names, slots)
	var out outBatch
	jobs := make([]*outJob, 0, len(names))
	items := map[string]map[string][]byte{}
	for _, name := range names {
		deferredWhole, wasDeferred := s.deferred[name]
		delete(s.deferred, name)
		heldWhole := s.takeHeld(name)
		whole := all || back[name].whole || deferredWhole || heldWhole
		if f := s.flying[name]; f != nil {
			// In flight: sent again, with what changed meanwhile, once it
			// is back (unless it left: then its DELETE goes, Remove).
			if viewOf(views, name) != nil {
				f.again, f.whole, f.remove = true, f.whole || whole, false
			}
			continue
		}
		if !whole && !wasDeferred && s.hold(name, began) {
			continue // filled less than a gap ago: held, and sent once it has passed
		}
		if j := s.prepare(views, viewOf(views, name), whole, slots > 0); j != nil {
			if j.req != nil {
				slots--
			}
			jobs = append(jobs, j)
			if j.syncItems {
				items[name] = j.mo.items
			}
		}
	}
	if len(items) > 0 {
		s.itemsRecorded(s.cfg.Pub.ItemsAll(ctx, items), jobs)
	}
	for _, j := range jobs {
		switch {
		case j.deferred:
			s.deferFill(j.v.Name, j.whole) // made once a worker is free: its report then
		case j.req == nil:
			out.add(j.v, j.mo) // nothing to fill: its report is now
			delete(back, j.v.Name)
		default:
			s.launchFill(j)
		}
	}
	for name, l := range back {
		if s.heldByDaemon(name) {
			s.keepHeld(name, l.whole) // reported once let go, as its view then says
			continue
		}
		// The fill that came back (another may be in flight); not one of
		// a module that left since and is back: what it says is its
		// old moduleOut's, and the new one's whole request is yet to land.
		if mo := s.modules[name]; mo != nil && l.v != nil && l.mo == mo {
			out.add(l.v, mo)
		}
	}
	// The reports' puts are not waited for (report.PutReports): their
	// events go out as their acks come, and a put lost is taken in by a
	// later Send or the retry tick (takeLost).
	for i, w := range s.cfg.Pub.PutReports(ctx, out.reports) {
		s.reported(out.mos[i], out.reports[i], w)
	}
	s.FlushNeeds(ctx, false)
	if len(jobs) > 0 || len(out.reports) > 0 {
		if e := s.cfg.Log.Debug(); e.Enabled() { // off by default: nothing of it is made
			e.Int("modules", len(jobs)).Int("reports", len(out.reports)).Int("in_flight", len(s.flying)).
				Int("deferred", len(s.deferred)).Dur("took", time.Since(began)).Msg("output")
		}
	}
}

// outBatch is the reports one Send writes, all modules' together.
type outBatch struct {
	reports []report.Report
	mos     []*moduleOut
}

func (b *outBatch) add(v *nodes.ModuleView, mo *moduleOut) {
	b.reports = append(b.reports, reportOf(v, mo))
	b.mos = append(b.mos, mo)
}

// prepare works out a module's items (written by the caller, all
// modules' together), queues its needs and makes its fill request when
// a worker is free for it (free; else the job is deferred); nil when the
// module is not on this node (v nil).
func (s *Stage) prepare(views Views, v *nodes.ModuleView, all, free bool) *outJob {
	if v == nil {
		return nil
	}
	mo := s.modules[v.Name]
	if mo == nil {
		mo = newModuleOut()
		s.modules[v.Name] = mo
		delete(s.saidGone, v.Name) // back on the node: its next leave is said again
		if b, ok := s.before[v.Name]; ok {
			mo.takeBefore(b)
			delete(s.before, v.Name)
		}
		mo.sinceBefore = s.sinceBefore[v.Name]
		delete(s.sinceBefore, v.Name)
	}
	// Items are synced when they moved, on a full send, or when the
	// module is retried (a write failed, or a Sweep adopted keys its sync
	// is to delete).
	// So are needs (queueNeeds).
	force := all || mo.retry
	mo.retry, mo.refusedWait = false, false
	delete(s.answered, v.Name)
	if s.removing[v.Name] { // back on the node: its whole request declares it anew
		delete(s.removing, v.Name)
		delete(s.deleteWait, v.Name)
		s.saveRemovals()
	}
	s.queueNeeds(views, v, mo, force)
	mo.takeItems(v)
	j := &outJob{v: v, mo: mo, syncItems: force || mo.itemsDirty}
	if s.refusedHeld(v, mo, all) {
		mo.refusedWait = true // refused as it is: its report stays, and it goes once its wait passed (refused.go)
		return j
	}
	if !free {
		if whole, files, ok := toFill(v, mo, all || mo.resend); ok {
			j.deferred, j.whole = true, whole
			for _, i := range files {
				v.Files[i].Value.Release()
			}
		}
		return j
	}
	var err error
	if j.req, j.sent, err = fillRequest(v, mo, all || mo.resend); err != nil {
		// Its report says so now, and the retry tick tries again.
		mo.fail(report.Bound(err.Error()), time.Now())
		mo.retry = true
		s.cfg.Log.Error().Err(err).Str("module", v.Name).Msg("fill request not made")
	}
	return j
}

// itemsRecorded takes in what became of the jobs' items. An item the bus
// cannot hold fails its module (naming the collection and the limit), and
// is not tried again until its text changes; any other failure is tried
// again at the next retry tick.
func (s *Stage) itemsRecorded(errs map[string]error, jobs []*outJob) {
	for _, j := range jobs {
		if !j.syncItems {
			continue
		}
		module, err := j.v.Name, errs[j.v.Name]
		var tl *report.TooLargeError
		switch {
		case err == nil:
			j.mo.itemFail, j.mo.itemsDirty = "", false
		case errors.As(err, &tl):
			j.mo.itemFail, j.mo.itemsDirty = report.Bound(err.Error()), false
		default:
			j.mo.retry = true
			s.cfg.Log.Warn().Err(err).Str("module", module).Msg("items not recorded")
		}
	}
}

// reported takes in what became of a module's report, and logs a change
// of its state (logState). A report not written is logged and tried again
// at the next retry tick; the state remembered stays the one the bucket
// holds.
func (s *Stage) reported(mo *moduleOut, r report.Report, w report.Written) {
	if w.Err != nil {
		mo.retry = true
		s.cfg.Log.Warn().Err(w.Err).Str("module", r.Module).Str("state", r.State).Msg("report not written")
		return
	}
	if r.State == mo.state {
		s.logFailedAgain(mo, r)
		s.logWaitingAgain(mo, r)
		return
	}
	switch {
	case w.Wrote:
		mo.since = time.Now()
	case mo.state == "":
		// This run's first report is the one the bucket holds ("at"
		// aside): not put again, it says the state since the bucket's
		// "at", and so do status and explain.
		mo.since = mo.sinceBefore
	}
	mo.sinceBefore = time.Time{}
	s.logState(mo, r)
	s.setState(mo, r.State)
}

// takeLost takes in the reports whose puts were lost since it was last
// called: each is logged, its module tried again at the next retry tick,
// and the state remembered goes back to the one the bucket holds (the
// state of its last report acknowledged).
func (s *Stage) takeLost() {
	for _, l := range s.cfg.Pub.TakeLost() {
		mo := s.modules[l.Module]
		if mo == nil {
			continue
		}
		mo.retry = true
		s.cfg.Log.Warn().Err(l.Err).Str("module", l.Module).Str("state", l.State).Msg("report not written")
		s.setState(mo, s.cfg.Pub.Acked(l.Module))
	}
}

func (s *Stage) setState(mo *moduleOut, now string) {
	if s.cfg.OnState != nil && now != mo.state {
		s.cfg.OnState(mo.state, now)
	}
	mo.state = now
}

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

package stage

import (
	"context"
	"crypto/rand"
	"errors"
	"hash/maphash"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// Config is what a Stage writes to and how.
type Config struct {
	Node string
	Fill *fill.Client
	Pub  *report.Publisher
	Key  []byte // keys the digests of secret-bearing files in reports; nil: ReportKey(BusSecret), else a random one
	// BusSecret is the client's own bus secret (bus.Options.OwnSecret; nil:
	// none), the key's source when Key is nil.
	BusSecret []byte
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
		k, err := ReportKey(cfg.BusSecret, cfg.Node)
		if err != nil {
			return nil, err
		}
		cfg.Key = k
	}
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
		if mo := s.modules[name]; mo != nil && l.mo == mo {
			v := l.v
			if v == nil && l.shared {
				v = viewOf(views, name)
			}
			if v != nil {
				out.add(v, mo)
			}
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

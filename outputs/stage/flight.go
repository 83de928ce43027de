package stage

import (
	"context"
	"sync"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Fills and DELETEs run off the daemon's loop (issue 19.5): a node-engine
// that is slow or does not answer holds up neither the control socket nor
// prov.ask nor another module. At most one request is in flight per
// module (a module touched meanwhile is sent again once it is back, its
// changes coalesced), at most MaxFillsInFlight across modules: the loop
// hands each to one of that many workers, goroutines that live as long as
// the stage (a change costs no goroutine of its own: issue 20), and queues
// the rest. Its outcome comes back to the loop on Back (→ Land) and is
// taken in by the next Send, which writes the report.

// MaxFillsInFlight bounds the fill and DELETE requests sent at once
// (different modules; a module's requests are never concurrent).
const MaxFillsInFlight = 8

// Done is the outcome of one request sent off the loop; the loop hands it
// to Land.
type Done struct {
	Module  string
	job     *outJob           // the fill sent; nil for a DELETE
	removed []fill.FileResult // a DELETE's answer
	err     error
}

// flight is a module whose request is in flight.
type flight struct {
	again  bool // touched since it was sent: prepared again once it is back
	whole  bool // … with every file (a full send came meanwhile)
	remove bool // left the node since: its DELETE goes once it is back
}

// request is a request for a worker to send: do sends it.
type request struct {
	module string
	do     func(ctx context.Context) Done
}

// flights is the stage's requests off the loop.
type flights struct {
	flying map[string]*flight // module → its request in flight (or queued)
	landed map[string]landed  // module → its request back, for the next Send
	// reportsDue: the reports of requests back while others were in
	// flight wait for them until then at the latest (reportWait).
	reportsDue time.Time
	queued     []request // waiting for a worker
	// deferred: modules whose fill waits for a worker, made only once one
	// is free (deferFill), module → whole; deferOrder is their order
	// (names no longer in deferred are skipped).
	deferred   map[string]bool
	deferOrder []string
	out        int             // handed to the workers and not yet Landed
	workers    int             // started so far (up to MaxFillsInFlight)
	toWorkers  chan request    // never full: at most MaxFillsInFlight out
	back       chan Done       // never full, for the same reason
	ctx        context.Context // cancelled by Stop
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func newFlights() flights {
	ctx, cancel := context.WithCancel(context.Background())
	return flights{flying: map[string]*flight{}, landed: map[string]landed{}, deferred: map[string]bool{},
		toWorkers: make(chan request, MaxFillsInFlight), back: make(chan Done, MaxFillsInFlight),
		ctx: ctx, cancel: cancel}
}

// Reports of requests back while others are still in flight wait for
// them, up to reportWait or reportBatch reports, and go to the bus
// together: a cold start's thousand modules would otherwise each cost a
// bus round trip on the loop. A request back with none in flight is
// reported at once.
const (
	reportWait  = 20 * time.Millisecond
	reportBatch = 256
)

// holdReports says whether the reports of the requests back wait for
// those still in flight; the first to wait sets when they are due.
func (s *Stage) holdReports(now time.Time) bool {
	if len(s.flying) == 0 || len(s.landed) >= reportBatch {
		return false
	}
	for _, l := range s.landed {
		if l.again {
			return false // touched while in flight: sent again now
		}
	}
	if s.reportsDue.IsZero() {
		s.reportsDue = now.Add(reportWait)
	}
	return now.Before(s.reportsDue)
}

// landed is a module whose request came back, for the next Send.
type landed struct {
	v     *nodes.ModuleView // the view its fill was made from; nil for a DELETE
	mo    *moduleOut        // what took in that fill: reported only while it is the module's
	again bool
	whole bool
	// shared: no fill of its own, but a file it shares moved under
	// another module's (sharedMoved): reported from its view now.
	shared bool
}

// free is how many more fills may be made now: as many as the workers
// would take, and as many again queued ready for them (a worker back takes
// the next at once, while the loop makes the one after).
func (s *Stage) free() int { return 2*MaxFillsInFlight - s.out - len(s.queued) }

// A fill is made only when a worker is free for it or soon will be (issue
// 20): a cold start's or a refill's thousand modules went out eight at a
// time, and their requests, made all at once, held every file's bytes
// until each was answered (~90 MB of a 100,000-file node's peak). A module whose turn has
// not come is deferred: its files' values let go of their bytes, and it is
// made (its bytes rendered again) by the Send after a worker came back,
// oldest first, after the modules touched since.

// deferFill defers module's fill (whole: every file) until a worker is free.
func (s *Stage) deferFill(module string, whole bool) {
	if w, ok := s.deferred[module]; ok {
		s.deferred[module] = w || whole
		return
	}
	s.deferred[module] = whole
	s.deferOrder = append(s.deferOrder, module)
}

// undefer appends to names the deferred modules a free worker can take
// (up to n), oldest first. Those it appends, and those already named, leave
// deferOrder (deferFill puts one deferred again at its end).
func (s *Stage) undefer(names []string, n int) []string {
	if len(s.deferOrder) == 0 {
		return names
	}
	named := make(map[string]bool, len(names))
	for _, m := range names {
		named[m] = true
	}
	kept := s.deferOrder[:0]
	for _, m := range s.deferOrder {
		if _, ok := s.deferred[m]; !ok || named[m] {
			continue // sent, held or gone meanwhile, or already named
		}
		if n > 0 && !s.heldByDaemon(m) { // one the daemon holds stays deferred
			names = append(names, m)
			named[m] = true
			n--
			continue
		}
		kept = append(kept, m)
	}
	clear(s.deferOrder[len(kept):])
	s.deferOrder = kept
	return names
}

// launch sends a request off the loop: do runs on a worker, with a
// context Stop cancels, and its outcome comes back on Back.
func (s *Stage) launch(module string, do func(ctx context.Context) Done) {
	s.flying[module] = &flight{}
	s.queued = append(s.queued, request{module, do})
	s.dispatch()
}

// dispatch hands queued requests to the workers while fewer than
// MaxFillsInFlight are out, starting a worker when none is free.
func (s *Stage) dispatch() {
	for len(s.queued) > 0 && s.out < MaxFillsInFlight {
		if s.workers == s.out {
			s.workers++
			s.wg.Add(1)
			go s.work()
		}
		s.toWorkers <- s.queued[0]
		s.queued[0] = request{}
		s.queued = s.queued[1:]
		s.out++
	}
}

// work sends the requests it is handed until the stage stops.
func (s *Stage) work() {
	defer s.wg.Done()
	for {
		select {
		case r := <-s.toWorkers:
			d := r.do(s.ctx)
			d.Module = r.module
			s.back <- d
		case <-s.ctx.Done():
			return
		}
	}
}

// Back gives the outcome of each request sent off the loop: the loop hands
// it to Land.
func (s *Stage) Back() <-chan Done { return s.back }

// launchFill sends j's fill request off the loop.
func (s *Stage) launchFill(j *outJob) {
	j.mo.lastFill = time.Now()
	s.launch(j.v.Name, func(ctx context.Context) Done {
		var resp fill.Response
		err := s.told(func() (err error) {
			resp, err = s.cfg.Fill.Fill(ctx, *j.req)
			return err
		})
		j.resp, j.err = resp, err
		return Done{job: j}
	})
}

// told makes one request to the fill socket (a fill, a removal), telling
// OnFillSent and OnFill of it.
func (s *Stage) told(request func() error) error {
	if s.cfg.OnFillSent != nil {
		s.cfg.OnFillSent()
	}
	start := time.Now()
	err := request()
	if s.cfg.OnFill != nil {
		s.cfg.OnFill(time.Since(start), err)
	}
	return err
}

// Land takes in a request's outcome (on the loop, from Back): what the node-engine did is recorded now, and the module's
// report written by the next Send, which also sends it again when it was
// touched meanwhile.
func (s *Stage) Land(d Done) {
	s.out--
	s.dispatch()
	f := s.flying[d.Module]
	if f == nil {
		return
	}
	delete(s.flying, d.Module)
	if d.job == nil {
		s.deleted(d.Module, d.removed, d.err)
		defer s.heardAnswer(d.Module, nil, d.err)
	} else if holder, ok := s.handover(d.job); ok {
		// Refused for a path a module that left still holds: not the
		// module's failure (handover.go); nothing of it is reported.
		f.again = s.handOver(d.job, holder) || f.again
		d.job = nil
	} else {
		d.job.mo.takeFill(d.job.v, d.job.req, d.job.sent, d.job.resp, d.job.err, s.cfg.Key, s.cfg.QuotesSecret)
		if d.job.err == nil {
			s.sharedMoved(d.Module, d.job)
		}
		s.logRemoved(d.Module, d.job.resp)
		s.heardHolder(d.Module, d.job.sent, d.job.err)
		defer s.heardAnswer(d.Module, d.job, d.job.err) // once it is landed: it may send others again (refused.go)
	}
	if f.remove {
		s.launchDelete(d.Module)
		return
	}
	l := landed{again: f.again, whole: f.whole}
	if d.job != nil {
		l.v, l.mo = d.job.v, d.job.mo
	}
	if d.job != nil || f.again {
		s.landed[d.Module] = l
	}
}

// InFlight counts the modules whose request is in flight.
func (s *Stage) InFlight() int { return len(s.flying) }

// Stop cancels the requests in flight and waits for their goroutines: a
// fill cut off is sent again, whole, at the next start.
func (s *Stage) Stop() {
	s.cancel()
	s.wg.Wait()
	if s.cfg.Fill != nil {
		s.cfg.Fill.CloseIdle()
	}
	// The last reports' acks, so their events go out before the
	// connection is drained (briefly: a bus away answers none).
	if s.cfg.Pub != nil {
		s.cfg.Pub.Settle(stopSettle)
	}
}

// stopSettle bounds how long Stop waits for report puts' acks.
const stopSettle = 500 * time.Millisecond

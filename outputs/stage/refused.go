package stage

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// A fill request the node-engine refused with a 4xx (403 a path or unit
// outside its --allow, 409 a path another module's declaration holds, 400
// a hard-linked managed file, ...) is refused again while nothing changes:
// sent at every retry tick, it only filled mesh-fill's log. So the same
// request (the same plan, the same files with the same bytes and spec, as
// whole or not) goes again no sooner than a delay that starts at the retry
// tick (Config.Retry) and doubles at each refusal in a row, up to
// refusedMax. What may change the answer sends it at once: a change of the
// module (another request), the refill tick's and any full send, the
// socket answering again after a request found no one there, and the
// module a 409 named letting go of its paths (its DELETE or a whole
// request answered). The module stays failed with the node-engine's reason
// throughout. A 5xx, a 408 or 429, and a socket that does not answer are
// tried again at every tick, as before (SPEC §4.3). A request too large
// for the client to send waits so too, and a DELETE refused (remove.go).
//
// A 5xx that says a program failed (fill.StatusError.ProgramFailed: the
// request was carried out, its files are in place, and the restart or
// reload it ran failed; the node-engine keeps it owed and runs it again
// with the module's next request, whatever it carries) waits the same
// way: sent at every tick, it restarted a unit that fails to start ~700
// times an hour. Its wait holds a retry whether or not it would be whole,
// while the module's files are those the failed request carried or filled
// before. As a refusal's, it does not hold a full send (the refill tick, a
// reconnect: SPEC §4.3 sends every file again, and a file changed on disk
// is put back), which runs the program owed again: a unit that fails to
// start is restarted once a refill (1 min by default) and at the wait's
// tries, not at every tick. Any other value of a file (a change) goes at
// once, and a fill that holds forgets the wait: the next failure waits a
// tick again. A 5xx not saying
// so (mesh-fill failing to write, its state dir; a node-engine that does
// not say it) is tried at every tick, as before: nothing of the request
// may be in place, and the next try may hold.
//
// refusedMax is a few minutes rather than the refill interval: the refill
// tick sends every module whole anyway (1 min by default), so with the
// default a refusal's cap is never reached; on a node whose --refill was
// set long, a fix made on the node-engine's side alone (an --allow
// widened, a hard link broken) is still taken within refusedMax, and a
// unit mended by hand is restarted by the client within it.
const refusedMax = 5 * time.Minute

// defaultRetry is Config.Retry's default: the daemon's retry tick's.
const defaultRetry = 5 * time.Second

// refusal is a module's last fill request, refused (permanent) or whose
// program failed (programFailed); a DELETE's holds its wait alone
// (Stage.deleteWait).
type refusal struct {
	whole bool
	plan  string
	sent  map[string]*nodes.FileValue // path → what it carried
	until time.Time                   // the same request goes again no sooner
	delay time.Duration               // the wait until then; doubles at the next refusal in a row
	// holder is the module a 409 said holds a path the request carried:
	// once it lets go (its DELETE or whole request answered), the request
	// goes again at once.
	holder string
	// program: not refused but carried out, a program it ran failing
	// (programFailed): a full send carrying nothing new waits too.
	program bool
}

// permanent says err is a refusal of the request itself, the same request
// refused again at every try: the node-engine's (a 4xx), or the client's
// (over fill.MaxBody: not sent, and rendered for nothing at every tick).
func permanent(err error) bool {
	if errors.Is(err, fill.ErrTooLarge) {
		return true
	}
	se, ok := errors.AsType[*fill.StatusError](err)
	if !ok || se.Status < 400 || se.Status > 499 {
		return false
	}
	return se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests
}

// programFailed says err is a 5xx the node-engine says came once the
// request was carried out, from a restart or reload it ran that failed
// (fill.StatusError.ProgramFailed): the program is still owed, and any
// request of the module runs it again.
func programFailed(err error) bool {
	se, ok := errors.AsType[*fill.StatusError](err)
	return ok && se.ProgramFailed
}

// unreachable says err is a request that found no one at the socket (its
// dial failed): the node-engine down, or restarting. A request that timed
// out or whose connection broke is not (a node-engine that hangs on, or
// drops, one module's request is not down), nor one the client did not
// send (over fill.MaxBody).
func unreachable(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// refusedHeld says the module's request would be the one refused last,
// whose wait has not passed: it is not sent now (the retry tick comes
// back for it). A module with nothing to send forgets its refusal: its
// next request is a new one. A full send (all) is never held.
func (s *Stage) refusedHeld(v *nodes.ModuleView, mo *moduleOut, all bool) bool {
	r := mo.refused
	if r == nil {
		return false
	}
	if all {
		return false // the refill tick, a reconnect: every file sent again (SPEC §4.3)
	}
	if r.program {
		return s.programHeld(v, mo, r)
	}
	// The request the module would send now: whole while a whole one is
	// owed (mo.resend: one failed with a 5xx). Judged on its changed
	// files alone, a module with none had its refusal dropped, and its
	// owed whole request went again at every tick (an outside audit).
	whole, files, ok := toFill(v, mo, mo.resend)
	if !ok {
		mo.refused = nil
		return false
	}
	if whole != r.whole || v.Plan != r.plan || len(files) != len(r.sent) {
		return false
	}
	for _, i := range files {
		f := &v.Files[i]
		if old := r.sent[f.Path]; old == nil || old != f.Value && !old.Equal(f.Value) {
			return false
		}
	}
	return s.now().Before(r.until)
}

// programHeld says a request of the module, whole or not, would carry
// nothing but what the node-engine holds already, as far as the stage
// knows: the plan is the one of the request whose program failed (r), and
// each file's value is the one that request carried, or, one it did not
// carry, the one last filled. Such a request would only run the failed
// program again: it waits for r's wait. Whether it is whole does not
// matter: the node-engine runs the program owed with any request.
func (s *Stage) programHeld(v *nodes.ModuleView, mo *moduleOut, r *refusal) bool {
	_, files, ok := toFill(v, mo, true)
	if !ok {
		mo.refused = nil
		return false
	}
	if v.Plan != r.plan {
		return false
	}
	for _, i := range files {
		f := &v.Files[i]
		old := r.sent[f.Path]
		if old == nil {
			old = mo.filled[f.Path]
		}
		if old == nil || old != f.Value && !old.Equal(f.Value) {
			return false
		}
	}
	return s.now().Before(r.until)
}

// heardAnswer takes in what a request's outcome says of refusals: j's
// own (a fill; nil for module's DELETE, which deleted took in), the socket
// answering again after one found no one there, and module letting go of
// its paths.
func (s *Stage) heardAnswer(module string, j *outJob, err error) {
	if unreachable(err) {
		s.fillDown = true
	} else if s.fillDown {
		s.fillDown = false
		// The node-engine may be another now (restarted, reconfigured):
		// what it refused goes again (but module's, just answered).
		for name, mo := range s.modules {
			if mo.refused != nil && name != module {
				mo.refused = nil
				s.sendAgain(name)
			}
		}
		for name := range s.deleteWait {
			if name == module {
				continue
			}
			delete(s.deleteWait, name)
			if s.flying[name] == nil && s.removing[name] {
				s.launchDelete(name)
			}
		}
	}
	if j != nil {
		mo := j.mo
		if permanent(err) || programFailed(err) {
			r := &refusal{whole: j.req.Whole, plan: j.v.Plan, sent: j.sent, delay: s.cfg.Retry, program: programFailed(err)}
			if mo.refused != nil {
				r.delay = min(2*mo.refused.delay, refusedMax)
			}
			r.until = s.now().Add(r.delay)
			if se, ok := errors.AsType[*fill.StatusError](err); ok && se.Holder != module && j.sent[se.Held] != nil {
				r.holder = se.Holder
				if s.letGo(se.Holder, se.Held) {
					r.until = s.now() // it let go before this answer came: the next tick tries again
				}
			}
			mo.refused = r
			s.mayHoldRefusals = true
		} else if err != nil || mo.failure == "" {
			// Another failure, tried at every tick; or filled. (A
			// request that let go of paths held elsewhere keeps the
			// refusal: the module is still failed, moduleOut.heldElsewhere.)
			mo.refused = nil
		}
	}
	if err == nil && (j == nil || j.req.Whole) && s.mayHoldRefusals {
		// Every module's whole request at a refill tick lands here: the
		// modules are walked only while one may hold a refusal.
		any := false
		for name, mo := range s.modules {
			if mo.refused != nil && mo.refused.holder == module {
				mo.refused = nil
				s.sendAgain(name)
			}
			any = any || mo.refused != nil
		}
		s.mayHoldRefusals = any
	}
}

// letGo says holder, one of the node's modules, no longer holds path at
// the node-engine as far as the stage knows: no request of it in flight,
// and its last whole request answered, and those since, did not name path.
// Its requests race the refused one's: the whole request that let go may
// have been answered before the refusal was.
func (s *Stage) letGo(holder, path string) bool {
	h := s.modules[holder]
	return h != nil && s.flying[holder] == nil && h.declared != "" && h.filled[path] == nil
}

// sendAgain has module sent by the next Send (once its request in flight
// is back, when one is).
func (s *Stage) sendAgain(module string) {
	if f := s.flying[module]; f != nil {
		if !f.remove {
			f.again = true
		}
		return
	}
	l := s.landed[module]
	l.again = true
	s.landed[module] = l
}

// While all that waits is refusals' waits, the daemon's retry tick sleeps
// (AtRest) and the stage's wake-up (HoldC) is armed for the earliest end
// of them: waking every tick to send nothing was most of an idle node's
// wake-ups while a refusal waited its 5 minutes. The Send of the wake-up
// (or of any batch after it) sends the requests whose wait passed, and the
// removals (dueRefused, dueRemovals).

// refusalDue says mo's request held for a refusal (refusedHeld) is due:
// its wait passed, or the refusal was forgotten meanwhile.
func (s *Stage) refusalDue(mo *moduleOut) bool {
	return mo.refusedWait && (mo.refused == nil || !s.now().Before(mo.refused.until))
}

// dueRefused adds to names each module whose refused request is due
// (each module once).
func (s *Stage) dueRefused(names []string) []string {
	if !s.mayHoldRefusals {
		return names
	}
	for name, mo := range s.modules {
		if s.refusalDue(mo) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// removalsWaitRefused says every removal not answered yet waits for a
// refusal's wait (or is in flight): none is for the retry tick.
func (s *Stage) removalsWaitRefused() bool {
	for module := range s.removing {
		if w := s.deleteWait[module]; s.flying[module] == nil && (w == nil || !s.now().Before(w.until)) {
			return false
		}
	}
	return true
}

// dueRemovals sends again each removal the node-engine refused whose wait
// passed (the others wait for the retry tick, RetryRemovals).
func (s *Stage) dueRemovals(ctx context.Context) {
	if len(s.deleteWait) == 0 {
		return
	}
	for _, module := range slices.Sorted(maps.Keys(s.removing)) {
		if w := s.deleteWait[module]; w != nil && !s.now().Before(w.until) && s.flying[module] == nil {
			s.Remove(ctx, module)
		}
	}
}

// refusalsEnd is when the earliest refusal's wait ends, in time.Now's
// terms (the waits are in s.now's); zero when none waits. A wait already
// passed is the retry tick's (AtRest says no): one whose module was not
// sent (no view) must not wake the loop again at once, and again.
func (s *Stage) refusalsEnd() time.Time {
	var first time.Time
	now := s.now()
	take := func(until time.Time) {
		if !now.Before(until) {
			return
		}
		if first.IsZero() || until.Before(first) {
			first = until
		}
	}
	if s.mayHoldRefusals {
		for _, mo := range s.modules {
			if mo.refusedWait && mo.refused != nil {
				take(mo.refused.until)
			}
		}
	}
	for module, w := range s.deleteWait {
		if s.removing[module] && s.flying[module] == nil {
			take(w.until)
		}
	}
	if first.IsZero() {
		return first
	}
	return time.Now().Add(first.Sub(now))
}

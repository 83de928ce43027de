package stage

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// Retrying lists the modules a write or fill failed for: the retry tick
// sends them again (a fill that failed left its files unrecorded, so only
// what was not filled yet goes out). The state dir's files a write failed
// for (Config.Removals, Config.KeptPlans) are written again now.
func (s *Stage) Retrying() []string {
	s.takeLost()
	if s.removalsOld {
		s.writeRemovals(true)
	}
	s.saveKeptPlans(true)
	var out []string
	for name, mo := range s.modules {
		if mo.retry || s.refusalDue(mo) {
			out = append(out, name)
		}
	}
	return out
}

// AtRest says a retry tick would find nothing to do: the sweep held, no
// removal waits for the node-engine, no file of the state dir waits to be
// written again, no module waits to be sent again,
// nothing is pending (Pending), and the publisher awaits no ack and holds
// no lost report (report.Publisher.Quiet). Until one of these changes,
// which only the daemon's loop can do through the stage (a Send, a Land,
// a Sweep, a removal, Forget) or a report put's ack arriving (awaited, it
// is not at rest), the daemon's retry tick can sleep. A request or a
// removal the node-engine refused, waiting for its wait to pass, leaves
// the stage at rest: HoldC wakes the loop when it has (refused.go).
func (s *Stage) AtRest() bool {
	if !s.swept || !s.removalsWaitRefused() || s.removalsOld || s.keptUnsaved || s.Pending() || (s.cfg.Pub != nil && !s.cfg.Pub.Quiet()) {
		return false
	}
	for _, mo := range s.modules {
		if mo.retry || s.refusalDue(mo) {
			return false
		}
	}
	return true
}

// Said is what the stage last said of a module.
type Said struct {
	State   string    // of its last report; "" before the first
	Since   time.Time // when that state was first written
	Failure string    // the fill socket's failure, until a fill succeeds
	// FailedSince is when Failure began: a fill that fails as the last
	// one did keeps it, one that fails otherwise moves it, one that
	// succeeds clears it. A module failed for its plan and then by the
	// fill is in state failed since the first, its fill failing since
	// the second.
	FailedSince time.Time
	// Reason is why the stage fails a module its view says is ready: an
	// item the bus cannot hold, else the fill socket's failure; "" when
	// it does not.
	Reason string
}

// Said is what the stage last said of module; false when it said nothing
// of it yet.
func (s *Stage) Said(module string) (Said, bool) {
	mo := s.modules[module]
	if mo == nil {
		return Said{}, false
	}
	reason := mo.itemFail
	if reason == "" {
		reason = mo.failure
	}
	return Said{State: mo.state, Since: mo.since, Failure: mo.failure, FailedSince: mo.failedAt, Reason: reason}, true
}

// States counts the modules by the state of their last report
// (applied, waiting, failed); modules not reported yet are not counted.
func (s *Stage) States() map[string]int {
	counts := map[string]int{"applied": 0, "waiting": 0, "failed": 0}
	for _, mo := range s.modules {
		if mo.state != "" {
			counts[mo.state]++
		}
	}
	return counts
}

// Forget makes the publisher compare everything against the bus again
// (after a reconnect the bus may have lost or kept writes). What it wrote
// before is forgotten too, so a key it no longer wants (a placeholder
// dropped, an item gone) would have nothing to delete it: the next Sweep
// reads the bus again, as at start, and adopts what is there for each
// live module's next sync to delete.
func (s *Stage) Forget() {
	s.cfg.Pub.Forget()
	s.swept = false
	for _, mo := range s.modules {
		mo.itemsDirty = true // the publisher compares them against the bus again
		mo.needsKnown = false
	}
}

// Changed publishes prov.changed for module (kind, key; key empty: every
// key). Never a value. It is said only of a module on the node (at start,
// when it is assigned, when its config moves), so a later leave is said
// again (Gone). That is not left to prepare alone: a module that comes
// back while its request or DELETE is still with the node-engine is not
// prepared until that lands, and left again meanwhile it was not said
// gone, a tool runner told it was assigned never hearing it left.
func (s *Stage) Changed(module, kind, key string) error {
	delete(s.saidGone, module)
	return s.cfg.Pub.Changed(module, kind, key)
}

// Gone publishes prov.changed for module saying it left this node, once
// (until it is back: Changed and prepare forget it).
func (s *Stage) Gone(module string) error {
	if s.saidGone[module] {
		return nil
	}
	if err := s.cfg.Pub.Gone(module); err != nil {
		return err
	}
	if s.saidGone == nil {
		s.saidGone = map[string]bool{}
	}
	s.saidGone[module] = true
	return nil
}

// Sweep deletes every key of this node's in the needs, collect and
// applied buckets that belongs to no live module (SPEC §4.7 r2: a module
// that left, or a placeholder dropped, while the client was down), and
// tells the node-engine of each module gone. Until a sweep held, each call
// tries again (the daemon calls it once loaded, then at every retry tick);
// once one did, calls do nothing until a removal's deletes fail or the
// bus came back (Forget).
func (s *Stage) Sweep(ctx context.Context, live func(module string) bool) {
	if s.swept {
		return
	}
	// A module gone whose removal is neither kept nor answered keeps its
	// keys (Removed): its applied key is then the only record that its
	// files are to go. The sweeps go on until they are deleted.
	kept := false
	sw, err := s.cfg.Pub.Sweep(ctx, func(module string) bool {
		if live(module) {
			return true
		}
		if !s.removing[module] && !s.answered[module] {
			// Kept (or found not kept) before its keys go: a start's
			// clean-up finds a module gone by its applied key alone.
			s.Remove(ctx, module)
		}
		if s.unkept(module) {
			kept = true
			return true
		}
		return false
	})
	for _, m := range sw.Adopted {
		if mo := s.modules[m]; mo != nil {
			mo.retry = true // its next sync deletes what it no longer wants
		}
	}
	s.keepBefore(sw)
	s.keepSinceBefore(sw.At)
	for m, files := range sw.Files {
		if mo := s.modules[m]; mo != nil {
			mo.takeBefore(files)
		} else {
			if s.before == nil {
				s.before = map[string][]report.File{}
			}
			s.before[m] = files
		}
	}
	for _, m := range slices.Sorted(maps.Keys(sw.Removed)) {
		// Its removed report is a change of its state (SPEC §5.1), said
		// as a module leaving while the client runs says it (Removed).
		s.cfg.Log.Info().Str("module", m).Str("state", "removed").Str("was", sw.Removed[m]).Msg("module removed")
	}
	for _, m := range sw.Gone {
		delete(s.before, m) // what a sweep that kept its keys read of them
		if !s.removing[m] && !s.answered[m] {
			// The node-engine removes its files (tried again until
			// answered): once. The read of its applied key above may
			// have sent it already, and a removal answered is not sent
			// again when a later sweep finds its keys.
			s.Remove(ctx, m)
		}
		// It left while the client was down: a tool runner holding its
		// config values is told, as for one leaving now (SPEC §5.4 r2).
		if err := s.Gone(m); err != nil {
			s.cfg.Log.Warn().Err(err).Str("module", m).Msg("prov.changed not published")
		}
	}
	s.swept = err == nil && !kept
	if err == nil {
		// A module said gone whose applied key the bucket no longer holds
		// will not be listed by a later Sweep: its mark is let go, so a
		// node whose modules come and go does not keep one for each.
		for m := range s.saidGone {
			if !slices.Contains(sw.Gone, m) {
				delete(s.saidGone, m)
			}
		}
	}
	// A key out of shape is said by key, as one the client reads is:
	// deleted, it would be gone with no line saying what it was.
	for _, k := range sw.OutOfShape {
		s.cfg.Log.Warn().Str("bucket", k.Bucket).Str("key", k.Key).AnErr("why", k.Why).
			Msg("key out of shape under this node: deleted (it belongs to no module)")
	}
	if sw.OutOfShapeMore > 0 {
		s.cfg.Log.Warn().Int("keys", sw.OutOfShapeMore).Msg("more keys out of shape under this node deleted, not logged one by one")
	}
	if err != nil {
		s.cfg.Log.Warn().Err(err).Msg("keys of modules no longer here not all deleted yet: trying again")
	} else if sw.Deleted > 0 || len(sw.Gone) > 0 {
		s.cfg.Log.Info().Int("keys", sw.Deleted).Strs("modules", sw.Gone).Msg("deleted keys of modules no longer on this node")
	}
}

// CheckOutputs looks at the output buckets (report.Publisher.LostBuckets:
// one stream info request each) and, when one was deleted or purged
// since this node wrote there, forgets what was written, as after a
// reconnect: without it, what the publisher remembers would keep every
// unchanged need, report and item from being put again until the client
// reconnected or restarted. The daemon calls it at its refill tick, whose
// full send then sweeps the buckets (Sweep) and writes again what is
// missing; what still stands is adopted, not put again.
func (s *Stage) CheckOutputs(ctx context.Context) {
	s.cfg.Pub.ForgetReports() // while a second client was heard: every report put again by this tick's full send
	lost := s.cfg.Pub.LostBuckets(ctx)
	if len(lost) == 0 {
		return
	}
	s.cfg.Log.Warn().Strs("buckets", lost).Msg("output buckets deleted or purged: writing this node's needs, reports and items in them again")
	s.Forget()
}

// Holders is, for each path the node-engine refused a module's request
// for since the last call because another module's declaration holds it
// (a 409 naming both), that holder: the truth of who holds the path
// (SPEC §4.3), for the mesh's order of claims (nodes.NodeGraph.Holds).
func (s *Stage) Holders() map[string]string {
	h := s.holders
	s.holders = nil
	return h
}

// heardHolder keeps the holder a 409 to module's request named for a
// path the request carried. A key's 409 (HeldKey) is not kept: the path is
// shared, and the mesh's order of claims would take it for the holder's
// own (nodes.NodeGraph.Holds).
func (s *Stage) heardHolder(module string, sent map[string]*nodes.FileValue, err error) {
	se, ok := errors.AsType[*fill.StatusError](err)
	if !ok || se.Held == "" || se.Holder == "" || se.HeldKey != "" || se.Holder == module || sent[se.Held] == nil {
		return
	}
	if s.holders == nil {
		s.holders = map[string]string{}
	}
	s.holders[se.Held] = se.Holder
}

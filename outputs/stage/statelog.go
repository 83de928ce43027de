package stage

import (
	"hash/maphash"

	"github.com/novox/mesh-provisioner/outputs/report"
)

// logWaiting is how many of a module's waits its state change's log line
// lists (the report and explain list them all).
const logWaiting = 32

// logState logs r, a module's report whose state is not the one last
// logged (mo.state), as one event: SPEC §5.1, one per state change of a
// module. A failure is a warning carrying its reason; nothing else of
// the client says a module's failure again (a plan refused is said here,
// not as the assignment is read: a re-read of the bucket said it anew).
func (s *Stage) logState(mo *moduleOut, r report.Report) {
	ev := s.cfg.Log.Info()
	if r.State == "failed" {
		ev = s.cfg.Log.Warn()
	}
	ev = ev.Str("module", r.Module).Str("state", r.State).Str("was", mo.state)
	// The reason and whys carry others' text (a provider's refusal, a
	// vault's reply): cut as in the report, so no log line carries a
	// megabyte of it, and the list bounded as a log line should be.
	if r.Reason != "" {
		ev = ev.Str("reason", report.Bound(r.Reason))
	}
	if len(r.Waiting) > 0 {
		ws := make([]report.Waiting, 0, min(len(r.Waiting), logWaiting))
		for _, w := range r.Waiting[:min(len(r.Waiting), logWaiting)] {
			w.Why = report.Bound(w.Why)
			ws = append(ws, w)
		}
		ev = ev.Interface("waiting", ws)
		if more := len(r.Waiting) - len(ws); more > 0 {
			ev = ev.Int("waiting_more", more)
		}
	}
	ev.Msg("module " + r.State)
	mo.loggedReason = r.Reason
	mo.loggedWaits = waitsSum(r)
}

// logWaitingAgain logs a waiting module's report that waits for other
// things than the one last logged (a kind and name come or go, not a why
// that says how often it was asked): its state did not change, but what
// it waits for did. Without it the one event of a module said what it
// waited for first (its templates archive, fetched a moment later) and
// never the config key or placement that held it after (an outside
// audit).
func (s *Stage) logWaitingAgain(mo *moduleOut, r report.Report) {
	if r.State == "waiting" && waitsSum(r) != mo.loggedWaits {
		s.logState(mo, r)
	}
}

var waitsSeed = maphash.MakeSeed()

// waitsSum sums the kinds and names a waiting report waits for (0 for
// another state).
func waitsSum(r report.Report) uint64 {
	if r.State != "waiting" {
		return 0
	}
	var h maphash.Hash
	h.SetSeed(waitsSeed)
	for _, w := range r.Waiting {
		h.WriteString(w.Kind)
		h.WriteByte(0)
		h.WriteString(w.Name)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// logFailedAgain logs a failed module's report whose reason is not the
// one last logged (a plan refused for another reason, a fill refused
// otherwise): its state did not change, but what an operator must fix
// did, and the failure's one log event is where it is said. A reason
// that stays says nothing at a refill tick or a re-read.
func (s *Stage) logFailedAgain(mo *moduleOut, r report.Report) {
	if r.State == "failed" && r.Reason != mo.loggedReason {
		s.logState(mo, r)
	}
}

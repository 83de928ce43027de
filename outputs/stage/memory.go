package stage

import (
	"context"
	"time"
)

// Retrying lists the modules a write or fill failed for: the retry tick
// sends them again (a fill that failed left its files unrecorded, so only
// what was not filled yet goes out).
func (s *Stage) Retrying() []string {
	var out []string
	for name, mo := range s.modules {
		if mo.retry {
			out = append(out, name)
		}
	}
	return out
}

// Said is what the stage last said of a module.
type Said struct {
	State   string    // of its last report; "" before the first
	Since   time.Time // when that state was first written
	Failure string    // the fill socket's failure, until a fill succeeds
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
	return Said{State: mo.state, Since: mo.since, Failure: mo.failure, Reason: reason}, true
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
// (after a reconnect the bus may have lost or kept writes).
func (s *Stage) Forget() { s.cfg.Pub.Forget() }

// Changed publishes prov.changed for module (kind, key; key empty: every
// key). Never a value.
func (s *Stage) Changed(module, kind, key string) error {
	return s.cfg.Pub.Changed(module, kind, key)
}

// Gone publishes prov.changed for module saying it left this node.
func (s *Stage) Gone(module string) error { return s.cfg.Pub.Gone(module) }

// CleanStaleItems deletes items of modules not live (no longer on this
// node), once: when it cannot (the collect bucket not there yet), the next
// call tries again; once it succeeded, calls do nothing.
func (s *Stage) CleanStaleItems(ctx context.Context, live func(module string) bool) {
	if s.staleItemsDone {
		return
	}
	n, err := s.cfg.Pub.DeleteStaleItems(ctx, live)
	s.staleItemsDone = err == nil
	if err != nil {
		s.cfg.Log.Warn().Err(err).Msg("stale items not cleaned yet: trying again")
	} else if n > 0 {
		s.cfg.Log.Info().Int("items", n).Msg("deleted items of modules no longer on this node")
	}
}

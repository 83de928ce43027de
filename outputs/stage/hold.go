package stage

import (
	"slices"
	"time"
)

// hold says whether module's output waits: it was filled less than
// Config.FillGap ago. Its changes so far are then held until the gap has
// passed, and go out together in one fill (the loop is woken for it).
func (s *Stage) hold(module string, now time.Time) bool {
	mo := s.modules[module]
	if mo == nil || s.cfg.FillGap <= 0 || mo.lastFill.IsZero() {
		return false
	}
	due := mo.lastFill.Add(s.cfg.FillGap)
	if !now.Before(due) {
		return false
	}
	s.held[module] = due
	return true
}

// dueHeld takes the held modules whose gap has passed, added to touched
// (each module once).
func (s *Stage) dueHeld(touched []string, now time.Time) []string {
	for module, due := range s.held {
		if now.Before(due) {
			continue
		}
		delete(s.held, module)
		if !slices.Contains(touched, module) {
			touched = append(touched, module)
		}
	}
	return touched
}

// armHold sets the loop's wake-up for the earliest held module (or the
// reports waiting for requests in flight, holdReports, or a refusal's
// wait, refusalsEnd).
func (s *Stage) armHold() {
	first := s.reportsDue
	for _, due := range s.held {
		if first.IsZero() || due.Before(first) {
			first = due
		}
	}
	if end := s.refusalsEnd(); !end.IsZero() && (first.IsZero() || end.Before(first)) {
		first = end
	}
	if first.IsZero() || first.Equal(s.holdAt) {
		return
	}
	s.holdAt = first
	if s.holdTimer == nil {
		s.holdTimer = time.NewTimer(time.Until(first))
	} else {
		s.holdTimer.Reset(time.Until(first))
	}
}

// HoldC fires when the earliest held module is due, or a refusal's wait
// passed: the loop then calls Woke and Send (which takes the modules and
// removals due); nil while nothing is held.
func (s *Stage) HoldC() <-chan time.Time {
	if s.holdAt.IsZero() {
		return nil
	}
	return s.holdTimer.C
}

// Woke says HoldC fired (the timer is no longer armed).
func (s *Stage) Woke() { s.holdAt = time.Time{} }

// Pending says output is still to go out: a module's changes held for its
// fill gap, needs not written yet (they wait while input keeps coming), a
// fill deferred until a worker is free, a request in flight or back but
// not reported yet, or a module the daemon holds to send once let go.
func (s *Stage) Pending() bool {
	return len(s.held) > 0 || len(s.pendingNeeds) > 0 || len(s.flying) > 0 || len(s.landed) > 0 || len(s.deferred) > 0 ||
		len(s.daemonHeld) > 0
}

package daemon

import (
	"slices"
	"time"
)

// hold says whether module's output waits: it was filled less than
// Config.FillGap ago. Its changes so far are then held until the gap has
// passed, and go out together in one fill (the loop is woken for it).
func (d *Daemon) hold(module string, now time.Time) bool {
	mo := d.modules[module]
	if mo == nil || d.cfg.FillGap <= 0 || mo.lastFill.IsZero() {
		return false
	}
	due := mo.lastFill.Add(d.cfg.FillGap)
	if !now.Before(due) {
		return false
	}
	d.held[module] = due
	return true
}

// dueHeld takes the held modules whose gap has passed, added to touched
// (each module once).
func (d *Daemon) dueHeld(touched []string, now time.Time) []string {
	for module, due := range d.held {
		if now.Before(due) {
			continue
		}
		delete(d.held, module)
		if !slices.Contains(touched, module) {
			touched = append(touched, module)
		}
	}
	return touched
}

// armHold sets the loop's wake-up for the earliest held module; holdC is
// its channel, nil while nothing is held.
func (d *Daemon) armHold() {
	var first time.Time
	for _, due := range d.held {
		if first.IsZero() || due.Before(first) {
			first = due
		}
	}
	if first.IsZero() || first.Equal(d.holdAt) {
		return
	}
	d.holdAt = first
	if d.holdTimer == nil {
		d.holdTimer = time.NewTimer(time.Until(first))
	} else {
		d.holdTimer.Reset(time.Until(first))
	}
}

func (d *Daemon) holdC() <-chan time.Time {
	if d.holdAt.IsZero() {
		return nil
	}
	return d.holdTimer.C
}

package daemon

import (
	"context"
	"time"
)

// readBackWait bounds how long the first fill waits, once firstLooks is
// done, for the start's Sweeps to read back what the last run left on the
// bus (stage.ReadBack: the applied and collect buckets): a NATS server
// restarted, or a JetStream leader elected again, under a client starting
// is back well within it, the client's reconnects (at most 5 s apart)
// included. A start whose first Sweep reads both, as a healthy one does,
// does not wait at all. Past it the first fill goes with what was read
// (a warning names the buckets not read): a module whose plan does not
// parse then holds no items, and one whose plan is refused no paths,
// until the plan is usable again.
const readBackWait = 30 * time.Second

// readingBack runs while the first load is not done, once firstLooks is:
// it sweeps (stage.Sweep) and says whether the first fill should still
// wait for a Sweep to read back what it has not. While it waits, the
// Sweep is tried again at each retry tick (retrying) and once the bus is
// back (sweepAgain).
//
// The mesh is handed what the last run left (HeldBefore, ItemsBefore)
// once, before its first stabilization (onLoaded). Handed an empty read
// because the bus dropped in the client's first seconds, a module whose
// plan did not parse lost its items from its collectors' files (their
// programs restarted), and a path held by a module whose plan is refused
// could be taken by a neighbour, for the whole run.
func (d *Daemon) readingBack(ctx context.Context, retrying bool) bool {
	if d.out.ReadBack() {
		return false
	}
	first := d.readBackFrom.IsZero()
	if first {
		d.readBackFrom = time.Now()
	}
	if first || retrying || d.sweepAgain {
		d.sweepAgain = false
		d.out.Sweep(ctx, d.mesh.HasModule)
		if d.out.ReadBack() {
			if !first {
				d.log.Info().Msg("what the last run left on the bus is read back")
			}
			return false
		}
	}
	if time.Since(d.readBackFrom) < readBackWait {
		if first {
			d.log.Warn().Strs("unread", d.out.Unread()).Dur("at_most", readBackWait).
				Msg("the first fill waits for what the last run left on the bus to be read back")
		}
		return true
	}
	d.log.Warn().Strs("unread", d.out.Unread()).Dur("waited", time.Since(d.readBackFrom)).
		Msg("what the last run left on the bus is not all read back: filling without it " +
			"(a module whose plan does not parse holds no items, one whose plan is refused no paths)")
	return false
}

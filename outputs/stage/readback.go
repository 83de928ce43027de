package stage

import (
	"context"
	"slices"
	"time"

	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// What the last run left on the bus, read back by the start's Sweeps and
// handed to the mesh once, before its first stabilization (HeldBefore,
// ItemsBefore): who held each path, and each module's items.
//
// A Sweep that fails (the bus lost in the first seconds, a bucket's read
// refused) does not hand over an empty read: what it read of each bucket
// is kept, and a later Sweep adds the buckets it had not read, until
// ReadBack says every one was read (the daemon waits for that, bounded,
// before its first fill). Before, the first Sweep's read was handed over
// whatever it was: one that failed left a module whose plan does not
// parse without its items (its collectors' files rewritten without them)
// and a module whose plan is refused without its paths, for the whole run.

// readBackBuckets are the buckets the handover reads: the applied bucket
// (the reports' files: who held each path) and the collect bucket (items).
var readBackBuckets = []string{spec.AppliedBucket, spec.CollectBucket}

// keepBefore keeps what sw read of the last run, until it is handed
// over. A report's files come with the first Sweep that reads the report
// (the publisher remembers it then, and a later Sweep lists it no more):
// they are added module by module. The collect bucket read whole says
// every item of the live modules: it replaces an earlier read.
func (s *Stage) keepBefore(sw report.Swept) {
	if !s.heldTaken {
		for m, files := range sw.Files {
			if s.filesBefore == nil {
				s.filesBefore = map[string][]report.File{}
			}
			s.filesBefore[m] = files
		}
	}
	if !s.itemsTaken && slices.Contains(sw.Read, spec.CollectBucket) {
		s.itemsBefore = sw.Items
	}
	if s.heldTaken && s.itemsTaken {
		return
	}
	for _, b := range sw.Read {
		if s.readBack == nil {
			s.readBack = map[string]bool{}
		}
		s.readBack[b] = true
	}
}

// ReadBack says the start's Sweeps, together, read whole every bucket
// HeldBefore and ItemsBefore hand over (or that they were handed over).
func (s *Stage) ReadBack() bool {
	return len(s.Unread()) == 0
}

// Unread names the buckets ReadBack waits for.
func (s *Stage) Unread() []string {
	if s.heldTaken && s.itemsTaken {
		return nil
	}
	var out []string
	for _, b := range readBackBuckets {
		if !s.readBack[b] {
			out = append(out, b)
		}
	}
	return out
}

// HeldBefore is, for each path the last run's reports (read by the
// start's Sweeps) name for one live module alone, that module: who held
// it at the node-engine before this run (nodes.NodeGraph.HeldBefore). It
// is handed over once.
func (s *Stage) HeldBefore() map[string]string {
	if s.heldTaken {
		return nil
	}
	h := heldBefore(s.filesBefore)
	s.filesBefore, s.heldTaken = nil, true
	return h
}

// ItemsBefore is what the collect bucket held of each live module when
// the start's Sweeps read it (module → collection → text): the last
// run's items, for a module whose plan does not parse at start
// (nodes.NodeGraph.ItemsBefore). It is handed over once.
func (s *Stage) ItemsBefore() map[string]map[string][]byte {
	it := s.itemsBefore
	s.itemsBefore, s.itemsTaken = nil, true
	return it
}

func heldBefore(files map[string][]report.File) map[string]string {
	out := map[string]string{}
	two := map[string]bool{}
	for m, fs := range files {
		for _, f := range fs {
			if f.Action == fill.ActionRemoved {
				continue
			}
			if h, ok := out[f.Path]; ok && h != m {
				two[f.Path] = true
			}
			out[f.Path] = m
		}
	}
	for p := range two {
		delete(out, p) // shared (managed forms), or not known
	}
	return out
}

// ReadBackWait bounds how long the first fill waits for the start's Sweeps
// to read back what the last run left on the bus (the applied and collect
// buckets: ReadBack): a NATS server restarted, or a JetStream leader
// elected again, under a client starting is back well within it, the
// client's reconnects (at most 5 s apart) included. A start whose first
// Sweep reads both, as a healthy one does, does not wait at all; nor does
// one whose bus user is refused either (its lookup or the read of its
// keys: a permission violation), which no wait would read back: it counts
// as read, as a bucket that does not exist does (report.Swept.Read). Past it
// the first fill goes with what was read (a warning names the buckets not
// read): a module whose plan does not parse then holds no items, and one
// whose plan is refused no paths, until the plan is usable again.
const ReadBackWait = 30 * time.Second

// ReadingBack runs while the client's first load is not done: it sweeps
// (Sweep; at its first call, and again when sweep says so: a retry tick,
// the bus back) and says whether the first fill should still wait for a
// Sweep to read back what it has not.
//
// The mesh is handed what the last run left (HeldBefore, ItemsBefore)
// once, before its first stabilization. Handed an empty read because the
// bus dropped in the client's first seconds, a module whose plan did not
// parse lost its items from its collectors' files (their programs
// restarted), and a path held by a module whose plan is refused could be
// taken by a neighbour, for the whole run.
func (s *Stage) ReadingBack(ctx context.Context, live func(module string) bool, sweep bool) bool {
	if s.ReadBack() {
		return false
	}
	first := s.readBackFrom.IsZero()
	if first {
		s.readBackFrom = time.Now()
	}
	if first || sweep {
		s.Sweep(ctx, live)
		if s.ReadBack() {
			if !first {
				s.cfg.Log.Info().Msg("what the last run left on the bus is read back")
			}
			return false
		}
	}
	if time.Since(s.readBackFrom) < ReadBackWait {
		if first {
			s.cfg.Log.Warn().Strs("unread", s.Unread()).Dur("at_most", ReadBackWait).
				Msg("the first fill waits for what the last run left on the bus to be read back")
		}
		return true
	}
	s.cfg.Log.Warn().Strs("unread", s.Unread()).Dur("waited", time.Since(s.readBackFrom)).
		Msg("what the last run left on the bus is not all read back: filling without it " +
			"(a module whose plan does not parse holds no items, one whose plan is refused no paths)")
	return false
}

// keepSinceBefore keeps, for each live module whose report of the last
// run a Sweep read (at: its "at"), when that report's state was written,
// until the module's first report of this run (moduleOut.sinceBefore).
// Without it a client started again said every module unchanged since the
// restart, while the report in the bucket, not put again (SPEC §5.3),
// still said the last run's "at". An "at" that does not read as RFC 3339
// is left out: the state is then said since this run's first report.
func (s *Stage) keepSinceBefore(at map[string]string) {
	for m, a := range at {
		t, err := time.Parse(time.RFC3339, a)
		if err != nil {
			continue
		}
		if mo := s.modules[m]; mo != nil {
			if mo.state == "" {
				mo.sinceBefore = t
			}
			continue
		}
		if s.sinceBefore == nil {
			s.sinceBefore = map[string]time.Time{}
		}
		s.sinceBefore[m] = t
	}
}

package fill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// A request's programs run after its files are renamed into place. A
// mesh-fill stopped between the two (killed, the machine down) lost them
// for good: its files then read unchanged at every request, and nothing
// restarted the program for bytes it had not read. So before its first
// rename a request keeps the programs it is to run, with those of its
// module not yet run, in the state dir (pending-<digest>.json, written
// with renameio), and clears them once they ran. Those found at start
// are run once the socket listens, each module's under its lock; those a
// failed request left, by the module's next request that succeeds. A
// program is so run once more than needed when a request fails before
// its renames, never once less.

// pendingState is a module's pending file.
type pendingState struct {
	Module   string    `json:"module"`
	Programs []Program `json:"programs"`
}

func (l *ledger) pendingFile(module string) string {
	return filepath.Join(l.dir, "pending-"+moduleDigest(module)+".json")
}

// mergePrograms is a's programs (all kept, "none" too) and b's with an
// action, each unit once, restart winning over reload.
func mergePrograms(a, b []Program) []Program {
	out := slices.Clone(a)
	for _, p := range b {
		if p.Action == ProgramNone {
			continue
		}
		i := slices.IndexFunc(out, func(q Program) bool { return q.Unit == p.Unit })
		switch {
		case i < 0:
			out = append(out, p)
		case out[i].Action != ProgramRestarted:
			out[i].Action = p.Action
		}
	}
	return out
}

// intend keeps progs' actions with module's pending programs, on disk
// before the request renames anything, and returns the pending programs.
func (l *ledger) intend(module string, progs []Program) ([]Program, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := mergePrograms(l.pending[module], progs)
	if slices.Equal(all, l.pending[module]) {
		return all, nil
	}
	if l.dir != "" {
		err := l.ensureDir()
		if err == nil {
			err = l.writePending(module, all)
		}
		if err != nil {
			return nil, err
		}
	}
	if l.pending == nil {
		l.pending = map[string][]Program{}
	}
	l.pending[module] = all
	return all, nil
}

// ran clears module's pending programs, which ran, but those that
// failed: they stay pending, and the module's next request (the client
// sends it again at its retry tick while the module is failed) runs them
// again. A restart that failed is so tried until it succeeds, rather than
// forgotten once the files read unchanged: the program would keep running
// on the bytes before the change while its module said applied.
func (l *ledger) ran(module string, failed []Program) error {
	if len(failed) > 0 {
		l.mu.Lock()
		delete(l.pending, module) // intend writes failed alone, not merged into what ran
		l.mu.Unlock()
		_, err := l.intend(module, failed)
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.pending[module]; !ok {
		return nil
	}
	delete(l.pending, module)
	if l.dir == "" {
		return nil
	}
	if err := l.ensureDir(); err != nil {
		return err
	}
	if err := os.Remove(l.pendingFile(module)); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("clearing the programs run from %s: %w", l.pendingFile(module), err)
	}
	return syncStateDir(l.dir)
}

// writePending writes module's pending file (l.mu held, l.dir set).
func (l *ledger) writePending(module string, progs []Program) error {
	raw, err := json.Marshal(pendingState{Module: module, Programs: progs})
	if err == nil {
		err = writeStateFile(l.pendingFile(module), raw)
	}
	if err == nil {
		err = syncStateDir(l.dir)
	}
	if err != nil {
		return fmt.Errorf("keeping the programs to run in %s: %w", l.pendingFile(module), err)
	}
	return nil
}

// pendingOf is module's pending programs.
func (l *ledger) pendingOf(module string) []Program {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.pending[module])
}

// loadPending reads the pending file p (l.mu held); an error is load's.
func (l *ledger) loadPending(p string) error {
	var ps pendingState
	raw, err := readStateFile(p)
	if err == nil {
		err = json.Unmarshal(raw, &ps)
	}
	if err == nil && (ps.Module == "" || l.pendingFile(ps.Module) != p) {
		err = errors.New("the module it names is not the one its name is for")
	}
	if err != nil {
		return fmt.Errorf("pending file %s unreadable or corrupt (%w): it holds the programs (restart, reload) a request had not run "+
			"when mesh-fill stopped; restore it, or restart its module's programs yourself and move it out of %s", p, err, l.dir)
	}
	if l.pending == nil {
		l.pending = map[string][]Program{}
	}
	l.pending[ps.Module] = ps.Programs
	return nil
}

// pendingAtStart is every module's pending programs as load read them:
// Serve takes it before its socket listens, so the start runs those
// alone (runPending), never one that a request of this run left pending.
func (l *ledger) pendingAtStart() map[string][]Program {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]Program, len(l.pending))
	for m, progs := range l.pending {
		out[m] = slices.Clone(progs)
	}
	return out
}

// runPending runs, at start, the programs requests had not run when
// mesh-fill stopped (atStart, read before the socket listened), each
// module's under its lock, and of them only those still pending as they
// were: a request served meanwhile ran them (its answer names them), or
// failed after its renames and merged them into its own (restart winning
// over reload), which the module's next request runs and names. A
// program a request of this run left pending is that request's module's
// next request's, never run here. A unit --allow-unit no longer admits
// is left, and said.
func (s *Server) runPending(ctx context.Context, atStart map[string][]Program) {
	for _, module := range slices.Sorted(maps.Keys(atStart)) {
		unlock := s.lock(module, nil, false)
		now := s.state.pendingOf(module)
		var owed, progs []Program
		for _, p := range atStart[module] {
			if !slices.Contains(now, p) {
				continue
			}
			owed = append(owed, p)
			if !s.unitAllowed(p.Unit) {
				s.Log.Warn().Str("module", module).Str("unit", p.Unit).Str("action", p.Action).
					Msg("program pending since mesh-fill stopped, but its unit is outside --allow-unit now: not run")
				continue
			}
			progs = append(progs, p)
		}
		if len(progs) > 0 {
			s.Log.Warn().Str("module", module).Int("programs", len(progs)).
				Msg("programs not run when mesh-fill stopped after writing their files: running them now")
		}
		failed, _ := s.runPrograms(ctx, module, progs) // each failure is logged
		if err := s.state.settle(module, owed, failed); err != nil {
			s.Log.Error().Str("module", module).Err(err).Msg("programs run, but still pending: they run again at the next start")
		}
		unlock()
	}
}

// settle clears, of module's pending programs, those of done that did not
// fail, and keeps the rest (module locked).
func (l *ledger) settle(module string, done, failed []Program) error {
	l.mu.Lock()
	var keep []Program
	for _, p := range l.pending[module] {
		if !slices.Contains(done, p) || slices.Contains(failed, p) {
			keep = append(keep, p)
		}
	}
	if len(keep) == len(l.pending[module]) {
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	return l.ran(module, keep)
}

// forgetPending drops module's pending programs whose unit is not among
// named (the programs of its whole request), on disk too, and returns
// those dropped.
func (l *ledger) forgetPending(module string, named []Program) (dropped []Program) {
	l.mu.Lock()
	var keep []Program
	for _, p := range l.pending[module] {
		if slices.ContainsFunc(named, func(q Program) bool { return q.Unit == p.Unit }) {
			keep = append(keep, p)
		} else {
			dropped = append(dropped, p)
		}
	}
	if len(dropped) == 0 {
		l.mu.Unlock()
		return nil
	}
	if len(keep) == 0 {
		l.mu.Unlock()
		_ = l.ran(module, nil) // clears it, and its pending file
		return dropped
	}
	delete(l.pending, module) // intend writes keep alone
	l.mu.Unlock()
	if _, err := l.intend(module, keep); err != nil {
		return nil
	}
	return dropped
}

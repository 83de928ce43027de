package stage

import (
	"context"
	"maps"
	"slices"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Remove tells the node-engine that module left this node, so it removes
// every file of it (DELETE /v1/modules/<module>, SPEC §4.3 and §4.7 (r2)).
// The DELETE goes off the loop, after the module's request in flight if
// one is; until it is answered the module is kept in Config.Removals, and
// RetryRemovals (the retry tick, a full send: a restart's first) tries
// again. A module sent again before then (back on the node) is not
// removed. Removed calls it; so may the clean-up of modules found gone
// after the first load.
func (s *Stage) Remove(_ context.Context, module string) {
	if !s.removing[module] {
		s.removing[module] = true
		s.saveRemovals()
	}
	delete(s.deferred, module) // its fill waits no more
	if f := s.flying[module]; f != nil {
		f.again, f.whole, f.remove = false, false, true
		return
	}
	s.launchDelete(module)
}

// launchDelete sends module's DELETE off the loop. Its outcome is the
// fill socket's health as a fill's is (OnFill): a node whose departed
// modules' files stay on disk because the node-engine does not answer
// read healthy before, with no error counted (an outside audit).
func (s *Stage) launchDelete(module string) {
	s.launch(module, func(ctx context.Context) Done {
		var files []fill.FileResult
		err := s.told(func() (err error) {
			files, err = s.cfg.Fill.Delete(ctx, module)
			return err
		})
		return Done{removed: files, err: err}
	})
}

// deleted takes in the node-engine's answer to module's DELETE. One it
// refused (a 4xx) goes again after a wait, as a refused fill does
// (refused.go); any other failure at the next tick.
func (s *Stage) deleted(module string, files []fill.FileResult, err error) {
	if permanent(err) {
		delay := s.cfg.Retry
		if w := s.deleteWait[module]; w != nil {
			delay = min(2*w.delay, refusedMax)
		}
		if s.deleteWait == nil {
			s.deleteWait = map[string]*refusal{}
		}
		s.deleteWait[module] = &refusal{delay: delay, until: s.now().Add(delay)}
		s.cfg.Log.Warn().Err(s.sayable(err)).Str("module", module).Dur("again_in", delay).Msg("the node-engine refused to remove the module's files: trying again")
		return
	}
	delete(s.deleteWait, module)
	if err != nil {
		s.cfg.Log.Warn().Err(s.sayable(err)).Str("module", module).Msg("the node-engine did not remove the module's files: trying again at the next tick")
		return
	}
	if s.removing[module] {
		delete(s.removing, module)
		s.saveRemovals()
	}
	if s.answered == nil {
		s.answered = map[string]bool{}
	}
	s.answered[module] = true
	if len(files) == 0 {
		// Said so: a node-engine that knows no file of the module (one
		// with items alone, or a mesh-fill on a new --state-dir, which
		// knows nothing written before it) left whatever is on disk.
		s.cfg.Log.Info().Str("module", module).Int("files", 0).Msg("the node-engine held no files of the module: none removed")
		return
	}
	s.cfg.Log.Info().Str("module", module).Int("files", len(files)).Msg("the node-engine removed the module's files")
}

// RetryRemovals tries again each removal the node-engine has not answered
// (the retry tick calls it) and that is not in flight, but one it refused
// whose wait has not passed (deleted).
func (s *Stage) RetryRemovals(ctx context.Context) { s.retryRemovals(ctx, false) }

// retryRemovals is RetryRemovals; all: a full send's, which waits for no
// refusal.
func (s *Stage) retryRemovals(ctx context.Context, all bool) {
	for _, module := range slices.Sorted(maps.Keys(s.removing)) {
		if w := s.deleteWait[module]; !all && w != nil && s.now().Before(w.until) {
			continue
		}
		if s.flying[module] == nil {
			s.Remove(ctx, module)
		}
	}
}

// logRemoved says, one line each, the files a whole request of module had
// the node-engine remove (no longer in its plan): they are not in its
// report, whose files are those the module has (SPEC §5.3).
func (s *Stage) logRemoved(module string, resp fill.Response) {
	for _, f := range resp.Files {
		if fill.Canonical(f.Action) == fill.ActionRemoved {
			s.cfg.Log.Info().Str("module", module).Str("path", f.Path).
				Msg("file no longer in the plan: the node-engine removed it")
		}
	}
}

// Removing lists the modules whose removal the node-engine has not
// answered yet, sorted.
func (s *Stage) Removing() []string { return slices.Sorted(maps.Keys(s.removing)) }

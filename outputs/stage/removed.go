package stage

import (
	"context"

	"github.com/novox/mesh-provisioner/outputs/report"
)

// Removed says a module was taken off this node: its needs and items go,
// a removed report is published and its applied key deleted (what fails
// is deleted by the next Sweep). The node-engine removes the files: it is
// told with Remove.
func (s *Stage) Removed(ctx context.Context, name string) {
	s.Remove(ctx, name)
	delete(s.pendingNeeds, name)
	pub, log := s.cfg.Pub, s.cfg.Log
	if s.unkept(name) {
		// Its applied key is the only record left that its files are to
		// go: it stays, with its needs and items, until the removal is
		// kept or answered (Sweep keeps them meanwhile, then deletes).
		s.swept = false
		log.Warn().Str("module", name).Msg("module taken off this node, but its removal is not kept in the state dir: its report, needs and items stay until it is kept or the node-engine answers it, so a restart meanwhile still removes its files")
		s.forgetRemoved(name)
		return
	}
	// What is not deleted now is by the next Sweep (at the retry tick).
	// The publisher deletes only the keys it remembers writing, and after
	// a reconnect it remembers none until they are written again (acks
	// lost while a stream has no leader leave them unwritten): so the next
	// Sweep reads the bus whatever these deletes say (chaos seed 887105:
	// a module's needs outlived it for good).
	s.swept = false
	if err := pub.Needs(ctx, name, nil); err != nil {
		s.swept = false
		log.Warn().Err(err).Str("module", name).Msg("needs not deleted")
	}
	if err := pub.Items(ctx, name, nil); err != nil {
		s.swept = false
		log.Warn().Err(err).Str("module", name).Msg("items not deleted")
	}
	if _, err := pub.Report(ctx, report.Report{Module: name, State: "removed"}); err != nil {
		s.swept = false
		log.Warn().Err(err).Str("module", name).Msg("removed report not published")
	}
	s.forgetRemoved(name)
}

// forgetRemoved drops module from what the stage holds of live modules
// and says it removed.
func (s *Stage) forgetRemoved(name string) {
	was := ""
	if mo := s.modules[name]; mo != nil {
		was = mo.state
		s.setState(mo, "")
	}
	delete(s.modules, name)
	delete(s.before, name)
	delete(s.sinceBefore, name)
	s.cfg.Log.Info().Str("module", name).Str("state", "removed").Str("was", was).Msg("module removed")
}

// unkept says module's removal is neither answered by the node-engine nor
// kept in Config.Removals (its last write failed): a restart now would
// forget it, but for the module's applied key, which is kept meanwhile.
func (s *Stage) unkept(module string) bool { return s.removing[module] && s.removalsOld }

package stage

import "slices"

// The daemon holds a module whose plan newly reads a provider's bucket
// not read yet (nodes.HoldUnread): its view says the binding is "not read
// yet", and it would be reported waiting for a moment while the binding
// was written all along. The daemon leaves it out of the modules it hands
// Send, but the stage also sends on its own: a fill back that was touched
// while in flight, a module held for its fill gap or deferred for a
// worker, a refusal whose wait passed, the needs queued before (a lean
// module's listed from the graph at the flush). So the stage asks the
// daemon (Config.Held) and starts none of these for a module it holds:
// no fill, report or need of it goes out, and its last report stands.
// What it would have sent is kept (daemonHeld: whole or not) and goes, as
// its view then says, at the first Send after the hold ended.

// heldByDaemon says the daemon holds module (Config.Held).
func (s *Stage) heldByDaemon(module string) bool {
	return s.cfg.Held != nil && s.cfg.Held(module)
}

// keepHeld keeps that module, held by the daemon, is to be sent once let
// go (whole: with every file).
func (s *Stage) keepHeld(module string, whole bool) {
	if s.daemonHeld == nil {
		s.daemonHeld = map[string]bool{}
	}
	s.daemonHeld[module] = s.daemonHeld[module] || whole
}

// holdAll keeps, at a full send, every module the daemon holds (the
// daemon named none of them) to be sent whole once let go.
func (s *Stage) holdAll() {
	if s.cfg.Held == nil {
		return
	}
	for m := range s.modules {
		if s.heldByDaemon(m) {
			s.keepHeld(m, true)
		}
	}
}

// letHeldGo adds to names each module kept held whose hold ended (each once).
func (s *Stage) letHeldGo(names []string) []string {
	for m := range s.daemonHeld {
		if !s.heldByDaemon(m) && !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	return names
}

// holdOff takes out of names the modules the daemon holds, keeping each
// to be sent once let go (whole when this send was to carry every file).
// The result does not share names' array when one is taken out.
func (s *Stage) holdOff(names []string, back map[string]landed, all bool) []string {
	if s.cfg.Held == nil || !slices.ContainsFunc(names, s.heldByDaemon) {
		return names // none held: nothing made (a change's Send)
	}
	out := make([]string, 0, len(names))
	for _, m := range names {
		if s.heldByDaemon(m) {
			s.keepHeld(m, all || back[m].whole)
			continue
		}
		out = append(out, m)
	}
	return out
}

// takeHeld says whether module was kept held to be sent whole, and
// forgets it: it is being sent.
func (s *Stage) takeHeld(module string) bool {
	whole := s.daemonHeld[module]
	delete(s.daemonHeld, module)
	return whole
}

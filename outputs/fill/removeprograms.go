package fill

import (
	"context"
	"slices"
)

// A file removed, or a module's block taken out of a shared file, is a
// change on disk (SPEC §4.3: a program is restarted or reloaded when a file
// of it changed on disk): the program the file's last request named is
// told of it, as it would be of a write. The ledger keeps that program
// with each file (held.OnChange) for it.
//
//   - A whole request that no longer names a file: the programs of the
//     files it removed and of the blocks it took out run with the
//     request's own, once per unit (restart winning), pending until they
//     hold as the request's are.
//   - DELETE of a module: its own program is leaving with it (restarting
//     it would start it again), so the owned files it removed tell no
//     program; a block taken out of a shared file (a line of sshd_config)
//     tells the program that reads the file, which stays. Those run once,
//     best effort: one that fails is logged and said in the answer, not
//     kept pending (the module is gone, and its DELETE answered).
//
// A unit now outside --allow-unit is not run (logged).

// heldProgram is what the ledger keeps of a file's on_change.
func heldProgram(oc OnChange) *OnChange {
	if oc.Unit == "" {
		return nil
	}
	return &oc
}

// removedProgram is the on_change a removal of h tells.
func removedProgram(h held) OnChange {
	if h.OnChange == nil {
		return OnChange{}
	}
	return *h.OnChange
}

// removedSteps are, for programs, the owned files of drop that gone
// removed (those that were there), each with the program its last request
// named; a unit outside --allow-unit now is dropped, logged.
func (s *Server) removedSteps(module string, drop map[string]held, gone []target) []step {
	var out []step
	for _, t := range gone {
		h, ok := drop[t.at()]
		if !ok || h.OnChange == nil || !t.exists() {
			continue
		}
		out = append(out, step{file: File{Path: h.Path, OnChange: *h.OnChange}, write: true})
	}
	return s.allowedSteps(module, out)
}

// allowedSteps keeps the steps whose unit mesh-fill may act on now.
func (s *Server) allowedSteps(module string, steps []step) []step {
	return slices.DeleteFunc(steps, func(st step) bool {
		f := st.file
		if u := f.OnChange.Unit; u != "" && !s.unitAllowed(u) {
			s.Log.Warn().Str("module", module).Str("path", f.Path).Str("unit", f.OnChange.Unit).
				Msg("removed, but its program is not told: its unit is outside --allow-unit now")
			return true
		}
		return false
	})
}

// blocksPrograms runs, once each, the programs of the blocks a DELETE took
// out, and says what became of them.
func (s *Server) blocksPrograms(ctx context.Context, module string, blocks []step) []Program {
	progs := programs(s.allowedSteps(module, slices.Clone(blocks)))
	progs = slices.DeleteFunc(progs, func(p Program) bool { return p.Action == ProgramNone })
	if len(progs) == 0 {
		return nil
	}
	failed, _ := s.runPrograms(ctx, module, progs) // each failure logged there
	for i := range progs {
		if slices.ContainsFunc(failed, func(f Program) bool { return f.Unit == progs[i].Unit }) {
			progs[i].Action = ProgramNone
		}
	}
	return progs
}

package fill

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
)

// removals works out what leaving the paths of drop (what module held and
// no longer names) does: an owned file is removed (gone), a managed-block
// file loses the module's block (a step writing the file without it), a
// seed or managed-keys file is left as it is. A path that can no longer be
// taken safely (now a symlink, say) is left and logged. The file taken is
// the one written: at the ledger's key, where the path led then, with no
// symlink followed; it is answered by the path as the module named it.
// The directories it checks are kept open in ds, for removeFiles.
func (s *Server) removals(ds *dirs, module string, drop map[string]held) (blocks []step, gone []target, err error) {
	chown := canChown()
	for _, at := range slices.Sorted(maps.Keys(drop)) {
		p, form := drop[at].Path, drop[at].Form
		if form != FormOwned && form != FormManagedBlock {
			continue
		}
		read := int64(readText) // a block's file, to take the block out
		if form == FormOwned {
			read = readNone // removed, not read
		}
		err := s.ownDir(p, at)
		var t target
		if err == nil {
			t, err = resolve(ds, p, at, read)
		}
		if isInStateDir(err) {
			// never refused: the client would send the removal for ever;
			// the module's declaration (a whole request's, a DELETE's)
			// forgets it
			s.Log.Warn().Str("module", module).Str("path", p).Err(err).
				Msg("not removed: it leads into mesh-fill's state dir (mounted or moved there since it was written), whose files no request removes; the module holds it no more")
			continue
		}
		if err != nil {
			s.Log.Warn().Str("module", module).Str("path", p).Err(err).Msg("no longer named, but left: it cannot be removed safely")
			continue
		}
		if form == FormOwned {
			gone = append(gone, t)
			continue
		}
		st := step{file: File{Path: p, Form: form, OnChange: removedProgram(drop[at])}, t: t, action: ActionRemoved, remove: true, uid: -1, gid: -1}
		if t.exists() {
			if err := oneName(t); err != nil {
				s.Log.Warn().Str("module", module).Str("path", p).Err(err).Msg("no longer named, but its block is left")
				continue
			}
			out, ok, err := removeBlock(p, module, t.current)
			if err != nil {
				s.Log.Warn().Str("module", module).Str("path", p).Err(err).Msg("no longer named, but its block is left: its markers are broken")
				continue
			}
			if ok {
				st.want, st.write, st.mode = out, true, t.info.Mode().Perm()
				if chown {
					st.uid, st.gid = ownerOf(t.info)
				}
			}
		}
		blocks = append(blocks, st)
	}
	return blocks, gone, nil
}

// removeFiles removes each owned file of gone that is there, then makes
// each directory removed from durable, once; each in its directory as
// resolve checked it (its parent), not by its path from the root, where
// a directory swapped for a symlink since would be followed.
func removeFiles(gone []target) error {
	var from []target // the first removed from each directory
	for _, t := range gone {
		if !t.exists() {
			continue
		}
		if err := t.parent.remove(t.base); err != nil {
			return fmt.Errorf("path %q: removing it: %w", t.path, err)
		}
		if !slices.ContainsFunc(from, func(d target) bool { return d.parent == t.parent }) {
			from = append(from, t)
		}
	}
	for _, d := range from {
		if err := d.parent.sync(); err != nil {
			return fmt.Errorf("syncing directory %s after removing from it: %w", path.Join("/", d.dir), err)
		}
	}
	return nil
}

// removed is the answer's entry, and a log line, for each file removed or
// block taken out.
func (s *Server) removed(module string, blocks []step, gone []target) []FileResult {
	out := []FileResult{} // "files": [] when none, never null
	for _, p := range append(targetPaths(gone), stepPaths(blocks)...) {
		s.Log.Info().Str("module", module).Str("path", p).Str("action", ActionRemoved).Msg("file removed")
		out = append(out, FileResult{Path: p, Action: ActionRemoved})
	}
	return out
}

func targetPaths(ts []target) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.path
	}
	return out
}

func stepPaths(sts []step) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = st.file.Path
	}
	return out
}

// removeModule is DELETE /v1/modules/<module>: every file the module holds
// removed as a whole request naming none would, and the module forgotten.
// Its files are taken a share of directories at a time (dirParts), each
// share's directories open only while its files are removed: a module
// may hold files in more directories than one request may open (its
// requests without whole add to what it holds), and it must still be
// removable.
func (s *Server) removeModule(ctx context.Context, module string) ([]FileResult, []Program, error) {
	// the module is gone: no program of its earlier requests is owed
	if err := s.state.ran(module, nil); err != nil {
		return nil, nil, err
	}
	drop := s.state.files(module)
	if len(drop) == 0 {
		return []FileResult{}, nil, nil
	}
	var blocks []step
	var gone []target
	for _, part := range dirParts(drop, s.dirLimit) {
		b, g, err := s.removeIn(module, part)
		if err != nil {
			return nil, nil, err // what is removed stays so; the module still holds it all, and its next DELETE goes on
		}
		blocks, gone = append(blocks, b...), append(gone, g...)
	}
	if err := s.state.record(module, nil, true); err != nil {
		return nil, nil, fmt.Errorf("files removed, but %w", err)
	}
	return s.removed(module, blocks, gone), s.blocksPrograms(ctx, module, blocks), nil
}

// removeIn removes the files of drop, in directories of their own opened
// for it, and sweeps the stale temp files beside them (the module's every
// path is locked).
func (s *Server) removeIn(module string, drop map[string]held) (blocks []step, gone []target, err error) {
	ds, err := s.openDirs()
	if err != nil {
		return nil, nil, err
	}
	defer ds.close()
	if blocks, gone, err = s.removals(ds, module, drop); err != nil {
		return nil, nil, err
	}
	if err := writeAll(ds, blocks, s.syncFSFrom()); err != nil {
		return nil, nil, err
	}
	if err := removeFiles(gone); err != nil {
		return nil, nil, err
	}
	s.sweepBeside(ds, module, slices.Collect(maps.Keys(drop)))
	return blocks, gone, nil
}

// dirParts splits files (by where each leads) into parts whose files are
// in at most limit directories each, a directory's files all in one part
// (limit ≤ 0: one part).
func dirParts(files map[string]held, limit int) []map[string]held {
	byDir := map[string][]string{}
	for at := range files {
		byDir[path.Dir(at)] = append(byDir[path.Dir(at)], at)
	}
	var parts []map[string]held
	var cur map[string]held
	n := 0
	for _, d := range slices.Sorted(maps.Keys(byDir)) {
		if cur == nil || (limit > 0 && n == limit) {
			cur, n = map[string]held{}, 0
			parts = append(parts, cur)
		}
		for _, at := range byDir[d] {
			cur[at] = files[at]
		}
		n++
	}
	return parts
}

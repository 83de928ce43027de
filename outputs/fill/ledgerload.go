package fill

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
)

// load reads every module's state file from dir, made 0700 when missing,
// and removes the temp files a mesh-fill stopped mid-write left there
// (stagedStateFile).
// The files of an older state file, keyed by the paths as named, are keyed
// by where locate says those lead.
//
// What load cannot trust stops mesh-fill from starting (load returns an
// error naming the file and how to recover): a state dir it cannot read,
// a state file that does not read or parse, or names another module than
// its name is for (badState), and one path held by two modules where one
// path is one module's (doubleClaims). Starting without a module's state
// forgets which files are its: another module could then take them, and
// a DELETE of it would leave them behind. An earlier mesh-fill set such a
// file aside and ran on; now the operator decides, knowing the module: put
// the file back as it was, or move it out of the state dir once its
// module's files are gone or may be taken by the next module that names
// them. No flag forgets a state file: moving it away is that, said
// where it is done, and a flag left in a unit would forget the next
// one unasked.
func (l *ledger) load(dir string, log zerolog.Logger, locate func(string) string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dir, l.log = dir, log
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	if err := trustedStateDir(dir); err != nil {
		return err
	}
	taken, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("state dir %s: reading it: %w; mesh-fill does not start without knowing what it wrote for which module", dir, err)
	}
	var bad []error
	for _, e := range entries {
		if stagedStateFile(e.Name()) {
			if err := removeStaged(dir, e); err != nil {
				log.Warn().Str("state_dir", dir).Str("file", e.Name()).Err(err).Msg("stale temp file of a state file not removed")
			} else {
				log.Warn().Str("state_dir", dir).Str("file", e.Name()).Msg("stale temp file of a state file removed: left by a mesh-fill stopped mid-write")
			}
			continue
		}
		if strings.HasPrefix(e.Name(), "pending-") && strings.HasSuffix(e.Name(), ".json") {
			if err := l.loadPending(filepath.Join(dir, e.Name())); err != nil {
				bad = append(bad, err)
			}
			continue
		}
		if !strings.HasPrefix(e.Name(), "module-") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		var ms moduleState
		raw, err := readStateFile(p)
		if err == nil {
			err = json.Unmarshal(raw, &ms)
		}
		if err == nil && (ms.Module == "" || l.stateFile(ms.Module) != p) {
			err = errors.New("the module it names is not the one its name is for")
		}
		if err != nil {
			bad = append(bad, badState(dir, p, err))
			continue
		}
		l.set(ms.Module, located(ms.Files, locate))
	}
	if len(bad) == 0 {
		bad = l.doubleClaims()
	}
	if len(bad) > 0 {
		l.modules, l.byPath, l.pending = nil, nil, nil
		return errors.Join(bad...)
	}
	l.taken = taken
	log.Info().Str("state_dir", dir).Int("modules", len(l.modules)).Int("modules_with_programs_pending", len(l.pending)).Msg("state read")
	return nil
}

// badState is the error of a state file load cannot trust, with what to do.
func badState(dir, p string, err error) error {
	return fmt.Errorf("state file %s unreadable or corrupt (%w): mesh-fill does not start without it, as it alone says which files "+
		"its module wrote (another module could take them, and removing the module would leave them); restore it, or, once you know "+
		"that module's files are gone or may be taken by the next module that names them, move it out of %s and start again", p, err, dir)
}

// doubleClaims are the paths two modules' state files both hold where a
// path is one module's (owned or seed), or a key both manage (l.mu held):
// each names the path, both modules and their state files.
func (l *ledger) doubleClaims() []error {
	var errs []error
	for _, at := range slices.Sorted(maps.Keys(l.byPath)) {
		mods := slices.Sorted(maps.Keys(l.byPath[at]))
		for i, a := range mods {
			for _, b := range mods[i+1:] {
				ha, hb := l.modules[a][at], l.modules[b][at]
				what := ""
				if exclusive(ha.Form) || exclusive(hb.Form) {
					what = fmt.Sprintf("path %q is held by module %q (%s) and by module %q (%s)", ha.Path, a, ha.Form, b, hb.Form)
				} else if k, ok := sharedKey(ha, hb); ok {
					what = fmt.Sprintf("path %q: key %q is managed by module %q and by module %q", ha.Path, k, a, b)
				} else {
					continue
				}
				errs = append(errs, fmt.Errorf("state dir %s: %s (state files %s and %s), where one may hold it: mesh-fill does not start "+
					"with both; move out of the state dir the state file of the module it is not (that module's other files are no longer "+
					"known as its then) and start again", l.dir, what, l.stateFile(a), l.stateFile(b)))
			}
		}
	}
	return errs
}

// trustedStateDir refuses a state dir another user could write in: its
// state files say which files mesh-fill (root) removes, and its pending
// files which units it restarts, so one planted there would have root
// remove any file or restart any unit. The dir must be this process's
// user's and writable by no group or other, as sshd's StrictModes has it.
func trustedStateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state dir %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("state dir %s is owned by uid %d with mode %04o: mesh-fill (uid %d) does not trust a state dir another user "+
			"may write in (a state file planted there would have it remove any file); make it %d's and not group or world writable",
			dir, st.Uid, fi.Mode().Perm(), os.Geteuid(), os.Geteuid())
	}
	return nil
}

package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rs/zerolog"
)

// held is what mesh-fill wrote at one path for one module. The ledger
// keys it by where the path leads (target.at), so two names of one file
// are one path. It keeps no digest of what it wrote: a file may hold a
// secret, and a state directory is no place for an oracle of one (an
// older state file's "digest" is read and dropped).
type held struct {
	Path string   `json:"path,omitempty"` // as the module named it; none in an older state file (keyed by it)
	Form string   `json:"form"`
	Keys []string `json:"keys,omitempty"` // managed-keys: the keys it set
	// OnChange is the program the file's request named (none: nil; an
	// older state file has none): removing the file, or the module's block
	// from it, is a change on disk that program is told of (removeprograms.go).
	OnChange *OnChange `json:"on_change,omitempty"`
}

// moduleState is one module's state file; its files are keyed by where
// each path leads, or by the path as named in an older mesh-fill's.
type moduleState struct {
	Module string          `json:"module"`
	Files  map[string]held `json:"files"`
}

// ledger is what mesh-fill wrote for which module (SPEC §4.3 (r2)): each
// module's declaration, that is the files of its last whole request and of
// every request since. It decides which files a whole request or a DELETE
// removes and which module a path belongs to. With a directory each
// module's part is kept there, one file per module written atomically
// (renameio) whenever it changes, and read back at start; without one
// (tests, benchmarks) it lasts as long as the process.
type ledger struct {
	mu      sync.Mutex
	dir     string
	modules map[string]map[string]held
	byPath  map[string]map[string]bool // path -> the modules holding it
	pending map[string][]Program       // module -> programs to run not yet run (pending.go)
	// unsaved are the modules whose state file holds less than the
	// memory: its last save failed (record)
	unsaved map[string]bool
	// taken is the state dir as load found it, unlock lets its lock go,
	// log says what ensureDir did (stateagain.go).
	taken  fs.FileInfo
	unlock func()
	log    zerolog.Logger
}

func (l *ledger) init() {
	if l.modules == nil {
		l.modules = map[string]map[string]held{}
		l.byPath = map[string]map[string]bool{}
	}
}

// stateFile is where a module's state is kept: named by a digest of the
// module's name, which may hold any byte a file name may not.
func (l *ledger) stateFile(module string) string {
	return filepath.Join(l.dir, "module-"+moduleDigest(module)+".json")
}

func moduleDigest(module string) string {
	sum := sha256.Sum256([]byte(module))
	return hex.EncodeToString(sum[:16])
}

// set replaces a module's files in memory (l.mu held).
func (l *ledger) set(module string, files map[string]held) {
	l.init()
	for p := range l.modules[module] {
		delete(l.byPath[p], module)
		if len(l.byPath[p]) == 0 {
			delete(l.byPath, p)
		}
	}
	if len(files) == 0 {
		delete(l.modules, module)
		return
	}
	l.modules[module] = files
	for p := range files {
		if l.byPath[p] == nil {
			l.byPath[p] = map[string]bool{}
		}
		l.byPath[p][module] = true
	}
}

// files is a copy of what the module holds.
func (l *ledger) files(module string) map[string]held {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.modules[module])
}

// heldAs is what module holds at the path at, if it holds it.
func (l *ledger) heldAs(module, at string) (held, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.modules[module][at]
	return h, ok
}

// sharedWith says whether a module other than module holds the path at.
func (l *ledger) sharedWith(module, at string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for m := range l.byPath[at] {
		if m != module {
			return true
		}
	}
	return false
}

// allPaths is every module's paths (where they lead).
func (l *ledger) allPaths() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.modules))
	for m, files := range l.modules {
		out[m] = slices.Collect(maps.Keys(files))
	}
	return out
}

// checkOwners refuses (409) a step of module's request at a path another
// module holds (where the paths lead: a file under another name is the
// same path): owned and seed paths are one module's; managed-block and
// managed-keys paths may be shared among those two forms, a key managed
// by one module alone.
func (l *ledger) checkOwners(module string, steps []step) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, st := range steps {
		at, p, form := st.t.at(), st.file.Path, st.file.Form
		for _, other := range slices.Sorted(maps.Keys(l.byPath[at])) {
			if other == module {
				continue
			}
			h := l.modules[other][at]
			as := "" // the other's name of the file, when another
			if h.Path != p {
				as = fmt.Sprintf(" as %q", h.Path)
			}
			if exclusive(form) || exclusive(h.Form) {
				return heldElsewhere(p, other, "path %q is module %q's (%s%s); module %q may not write it (%s)", p, other, h.Form, as, module, form)
			}
			if k, ok := sharedKey(held{Form: form, Keys: st.keys}, h); ok {
				return keyHeldElsewhere(p, k, other, "path %q: key %q is managed by module %q%s; module %q may not manage it too", p, k, other, as, module)
			}
		}
	}
	return nil
}

// exclusive says a form's path is one module's alone.
func exclusive(form string) bool { return form == FormOwned || form == FormSeed }

// sharedKey is a key two managed-keys holdings both manage.
func sharedKey(a, b held) (string, bool) {
	if a.Form != FormManagedKeys || b.Form != FormManagedKeys {
		return "", false
	}
	for _, k := range a.Keys {
		if slices.Contains(b.Keys, k) {
			return k, true
		}
	}
	return "", false
}

// located keys by where each path leads the files of an older state file,
// keyed by the paths as named (a file with no Path).
func located(files map[string]held, locate func(string) string) map[string]held {
	out := make(map[string]held, len(files))
	for _, p := range slices.Sorted(maps.Keys(files)) {
		h, at := files[p], p
		if h.Path == "" {
			h.Path, at = p, locate(p)
		}
		out[at] = h
	}
	return out
}

// record sets what module holds after a request: with whole, files is all
// of it; without, files are added to (or replace) what it held. The
// module's state file is written before the memory changes. When it
// cannot be written, the memory still takes files, added to all the
// module held (nothing forgotten): they are on disk, written by the
// request, and stay the module's (no other module may take them, its
// DELETE removes them) until a later request's save holds (the client
// sends the module again at every tick while it fails).
func (l *ledger) record(module string, files map[string]held, whole bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	had := maps.Clone(l.modules[module])
	if had == nil {
		had = map[string]held{}
	}
	next := files
	if !whole {
		next = maps.Clone(had)
		maps.Copy(next, files)
	}
	save := l.save
	if maps.EqualFunc(next, had, sameHeld) && !l.unsaved[module] {
		// The state file holds it already (a refill, a change of bytes
		// alone): no write, no fsync; only a look that the state dir is
		// still there, which makes it again with every module's file
		// when it is not (stateagain.go).
		save = func(string, map[string]held) error { return l.ensureDir() }
	}
	if err := save(module, next); err != nil {
		maps.Copy(had, files)
		l.set(module, had)
		if l.unsaved == nil {
			l.unsaved = map[string]bool{}
		}
		l.unsaved[module] = true
		return err
	}
	l.set(module, next)
	delete(l.unsaved, module)
	return nil
}

// hold adds files to what module holds, its state file written first,
// before the request renames anything: a file the request then writes is
// on disk as the module's before it is in place, so neither a save that
// fails after the renames nor a mesh-fill stopped between the two
// forgets it (after a restart a whole request no longer naming it would
// leave it, nobody's, for ever). Nothing is written when files add
// nothing and the state file holds what the memory does (a refill: every
// path held as it is); saved says whether it was. When the state file
// cannot be written, the request is to write nothing.
func (l *ledger) hold(module string, files map[string]held) (saved bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	had := l.modules[module]
	next := maps.Clone(had)
	if next == nil {
		next = map[string]held{}
	}
	maps.Copy(next, files)
	if maps.EqualFunc(next, had, sameHeld) && !l.unsaved[module] {
		return false, nil
	}
	if err := l.save(module, next); err != nil {
		return false, err
	}
	l.set(module, next)
	delete(l.unsaved, module)
	return l.dir != "", nil
}

func sameHeld(a, b held) bool {
	return a.Path == b.Path && a.Form == b.Form && slices.Equal(a.Keys, b.Keys) &&
		(a.OnChange == nil) == (b.OnChange == nil) && (a.OnChange == nil || *a.OnChange == *b.OnChange)
}

// save writes module's state file, or removes it when it holds nothing
// (l.mu held).
func (l *ledger) save(module string, files map[string]held) error {
	if l.dir == "" {
		return nil
	}
	if err := l.ensureDir(); err != nil {
		return err
	}
	return l.writeState(module, files)
}

// writeState writes module's state file, or removes it when it holds
// nothing (l.mu held, l.dir set).
func (l *ledger) writeState(module string, files map[string]held) error {
	p := l.stateFile(module)
	if len(files) == 0 {
		if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return fmt.Errorf("removing state file %s: %w", p, err)
		}
		return syncStateDir(l.dir)
	}
	raw, err := json.Marshal(moduleState{Module: module, Files: files})
	if err != nil {
		return err
	}
	if err := writeStateFile(p, raw); err != nil {
		return fmt.Errorf("writing state file %s: %w", p, err)
	}
	return syncStateDir(l.dir)
}

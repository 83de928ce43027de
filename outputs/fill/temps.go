package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
)

// A temp file's name is a dot, its target's name, tempMark and tempDigits
// random hex digits: ".app.conf.mesh-fill-tmp-3f09c2a1d4e5b6c7". The mark
// tells one that a mesh-fill killed mid-request left behind (a secret's
// holds the secret) from a user's dot file, so it can be removed
// (sweepTemps); renameio's names (a dot, the name, a number) did not.
const (
	tempMark   = ".mesh-fill-tmp-"
	tempDigits = 16
)

// maxName is the longest file name (in bytes) of Linux's file systems.
const maxName = 255

// maxTempBase is the most of a target's name its temp file's name holds.
const maxTempBase = maxName - 1 - len(tempMark) - tempDigits

// tempPrefix is the start of every temp file name of base: a dot, base,
// tempMark. A base too long for the name to fit maxName is cut, and ends
// in a digest of the whole name, so two long names alike in their first
// bytes have temp names of their own: a sweep for one never takes a temp
// file the other's request is writing.
func tempPrefix(base string) string {
	if len(base) > maxTempBase {
		sum := sha256.Sum256([]byte(base))
		base = base[:maxTempBase-1-tempDigits] + "~" + hex.EncodeToString(sum[:tempDigits/2])
	}
	return "." + base + tempMark
}

// tempName is a new temp file's name beside base. A variable for a test
// to make a temp file fail.
var tempName = func(base string) string {
	r := strconv.FormatUint(rand.Uint64(), 16)
	return tempPrefix(base) + strings.Repeat("0", tempDigits-len(r)) + r
}

// tempOf is, for a name in a directory, the prefix it would have as a
// temp file (the key of sweepTemps's bases), or "" when it is not one.
func tempOf(name string) string {
	n := len(name) - tempDigits
	if n <= 0 || !strings.HasSuffix(name[:n], tempMark) {
		return ""
	}
	for _, c := range []byte(name[n:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return name[:n]
}

// sweepTemps removes from d the temp files of bases (names in d) that a
// mesh-fill stopped mid-request left: only regular files (looked at
// without following a symlink; the unlink follows none either) named as a
// temp file of one of bases. No user's file is taken, a dot file
// included, nor another target's temp file. The caller makes sure no
// request of these bases is under way (it holds their paths, or serves
// none yet). It returns the names removed, and the first error met (it
// goes on past it).
func sweepTemps(d *dir, bases []string) (removed []string, err error) {
	ours := make(map[string]bool, len(bases))
	for _, b := range bases {
		ours[tempPrefix(b)] = true
	}
	names, err := d.names()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, name := range names {
		if !ours[tempOf(name)] {
			continue
		}
		st, err := d.lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !isRegular(st) {
			continue
		}
		if err == nil {
			err = d.remove(name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// sweepBeside removes the stale temp files beside each of paths (where
// they lead, below the root: the ledger's keys), in the directories of ds,
// and logs each removed, and what could not be looked at. A directory not
// there, or not a real one, holds nothing to sweep.
func (s *Server) sweepBeside(ds *dirs, module string, paths []string) {
	byDir := map[string][]string{}
	for _, at := range paths {
		rel := strings.TrimPrefix(at, "/")
		byDir[path.Dir(rel)] = append(byDir[path.Dir(rel)], path.Base(rel))
	}
	for _, rel := range slices.Sorted(maps.Keys(byDir)) {
		d, err := ds.there(rel)
		if d == nil || err != nil {
			continue
		}
		removed, err := sweepTemps(d, byDir[rel])
		for _, name := range removed {
			s.Log.Warn().Str("module", module).Str("path", path.Join("/", rel, name)).
				Msg("stale temp file removed: left by a mesh-fill stopped mid-request")
		}
		if err != nil {
			s.Log.Warn().Str("module", module).Str("dir", path.Join("/", rel)).Err(err).Msg("stale temp files not all removed")
		}
	}
}

// sweepHeld removes, at start, the stale temp files beside every path the
// ledger holds: those of a mesh-fill killed mid-request, before it serves
// any (a module's next whole request sweeps beside its paths too, those
// its first request had not yet recorded included).
//
// Each module's directories are opened, and closed, on their own: all
// the modules' at once outnumbered the open-file limit on a node whose
// modules' files are in many directories, and those opened past it were
// not swept (a kept temp file of a secret's stayed on disk).
func (s *Server) sweepHeld() {
	for module, paths := range s.state.allPaths() {
		ds, err := s.openDirs()
		if err != nil {
			s.Log.Warn().Err(err).Msg("stale temp files not looked for")
			return
		}
		s.sweepBeside(ds, module, paths)
		ds.close()
	}
}

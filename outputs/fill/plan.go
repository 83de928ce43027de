package fill

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"unicode"
)

// step is what the server will do for one file of a request.
type step struct {
	file   File
	t      target
	want   []byte      // the file's bytes afterwards
	action string      // written, unchanged, kept or merged
	write  bool        // whether the file is (re)written
	mode   fs.FileMode // the mode it is written with
	uid    int         // owner to give it, -1 to leave
	gid    int         // group to give it, -1 to leave
	keys   []string    // the keys a managed-keys file sets
	remove bool        // a block removed (action removed), not a file filled
}

// plan validates a whole request and works out every file's step before
// anything is written, so a refused file leaves all of the request unwritten.
// The directories it checks and reads files in stay open in the dirs it
// returns (nil with an error), for the request's removals and its write;
// the caller closes them.
//
// Mode: an owned file, or any file created, gets the request's mode or
// DefaultMode; an existing managed-keys or managed-block file keeps its own
// mode unless the request names one, less the write bit of others (0666
// is written 0664): mesh-fill writes no file any local user may rewrite,
// whether a request names such a mode (parseMode) or it was found so. Owner and group: when this process may
// chown (it runs as root) the named owner and group are set. An owned file,
// or any file created, that names no owner is mesh-fill's own user's, and
// one naming no group gets its owner's primary group, or root's
// (ownNew): never the owner, group or mode of the file that was there,
// which one who may write the directory could have planted to read (and
// rewrite) what mesh-fill writes. An existing managed-keys or
// managed-block file is someone else's file edited in place (as
// ansible's blockinfile does): it keeps its owner and group unless the
// request names them, so a module putting a secret into one names its
// owner, group and mode. When it may not
// chown (not root), owner and group are not set and this is not an error:
// the lab and tests run mesh-fill unprivileged, where every file is the
// caller's own; it is logged at debug level.
func (s *Server) plan(req Request) ([]step, *dirs, error) {
	if err := checkModule(req.Module); err != nil {
		return nil, nil, err
	}
	if err := checkNames(req.Files); err != nil {
		return nil, nil, err
	}
	// A file out of shape is a 400 saying so before the allow-lists are
	// asked: a relative path, a ".." or a unit that is no unit's name is
	// the request's fault, not a path or unit the operator did not allow
	// (403 "outside the paths mesh-fill may write" sent the operator to
	// the unit's --allow for a typo in the plan).
	for _, f := range req.Files {
		if err := checkShape(f); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range req.Files {
		if err := s.allowed(f); err != nil {
			return nil, nil, err
		}
	}
	ds, err := s.openDirs()
	if err != nil {
		return nil, nil, err
	}
	ds.digests = &s.seedDigests
	steps, err := s.planFiles(req, ds)
	if err != nil {
		ds.close()
		return nil, nil, err
	}
	return steps, ds, nil
}

// planFiles works out each file's step, in the directories of ds.
func (s *Server) planFiles(req Request, ds *dirs) ([]step, error) {
	chown := canChown()
	steps := make([]step, 0, len(req.Files))
	named := make(map[string]string, len(req.Files)) // where a path leads -> the path
	for _, f := range req.Files {
		at, err := s.locate(f.Path)
		if err != nil {
			return nil, err
		}
		if other, ok := named[at]; ok {
			return nil, refuse("path %q and path %q are both named in the request and are one file (%s)", other, f.Path, at)
		}
		named[at] = f.Path
		if err := s.allowedAt(f.Path, at); err != nil {
			return nil, err
		}
		if err := s.ownDir(f.Path, at); err != nil {
			return nil, err
		}
		read := int64(readText)
		switch f.Form {
		case FormOwned:
			read = int64(len(f.Content)) // an owned file's text is only compared
		case FormSeed:
			// kept as it is, its digest alone read (seeddigest.go), unless
			// the module's block is to be taken out of it (withoutOldForm)
			if h, ok := s.state.heldAs(req.Module, at); !ok || h.Form != FormManagedBlock {
				read = readDigest
			}
		}
		t, err := resolve(ds, f.Path, at, read)
		if err != nil {
			return nil, err
		}
		base, err := s.withoutOldForm(req.Module, at, f, t)
		if err != nil {
			return nil, err
		}
		want, action, err := content(f, req.Module, t, base)
		if err != nil {
			return nil, err
		}
		st := step{file: f, t: t, want: want, action: action, uid: -1, gid: -1}
		if f.Form == FormManagedKeys {
			st.keys = keyNames(f)
		}
		if action == ActionKept {
			steps = append(steps, st)
			continue
		}

		// mode
		st.mode = DefaultMode
		if t.exists() && f.Form != FormOwned {
			// kept, but never others' to write: parseMode refuses such a
			// mode named, and one found on disk is no better
			st.mode = t.info.Mode().Perm() &^ 0o002
		}
		if f.Mode != "" {
			if st.mode, err = parseMode(f.Path, f.Mode); err != nil {
				return nil, err
			}
		}

		// owner and group
		curUID, curGID := ownerOf(t.info)
		if chown {
			st.uid, st.gid = curUID, curGID
			if f.Form == FormOwned || !t.exists() {
				// a file that is all the request's is made anew: never
				// the owner or group of what was there (ownNew)
				st.uid, st.gid = ownNew(f.Owner)
			}
			if f.Owner != "" {
				id, ok := lookupID(f.Owner, false)
				if !ok {
					return nil, refuse("path %q: owner %q is not a user here", f.Path, f.Owner)
				}
				st.uid = id
			}
			if f.Group != "" {
				id, ok := lookupID(f.Group, true)
				if !ok {
					return nil, refuse("path %q: group %q is not a group here", f.Path, f.Group)
				}
				st.gid = id
			}
		} else if f.Owner != "" || f.Group != "" {
			s.Log.Debug().Str("path", f.Path).Str("owner", f.Owner).Str("group", f.Group).
				Msg("not root: owner and group left as they are")
		}

		if t.exists() && f.Form != FormOwned && s.state.sharedWith(req.Module, at) {
			// A path modules share (managed blocks and keys): the file keeps
			// its owner and group, and its mode only narrows, so two modules
			// naming different modes or owners do not undo each other at
			// every fill (and restart each other's programs for it).
			st.mode &= t.info.Mode().Perm()
			if chown {
				st.uid, st.gid = curUID, curGID
			}
		}

		switch {
		case !t.exists():
			st.write, st.action = true, ActionWritten
		case action == ActionMerged:
			st.write = true
		case f.Form == FormOwned && (t.info.Size() != int64(len(want)) || string(t.current) != string(want)):
			st.write, st.action = true, ActionWritten
		default: // bytes unchanged: a changed mode or owner still counts
			st.action = ActionUnchanged
			if t.info.Mode().Perm() != st.mode || (f.Form == FormOwned && (t.info.Mode()&specialBits != 0 || t.acl)) ||
				(st.uid >= 0 && st.uid != curUID) || (st.gid >= 0 && st.gid != curGID) {
				st.write, st.action = true, ActionWritten
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// specialBits are the mode bits besides the permissions a file may hold
// and a request may not name (parseMode): an owned file holding one is
// written again, with the request's mode alone.
const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// withoutOldForm is the text a file's form applies to: what is on disk,
// less what the module's old declaration of the path wrote and the new one
// no longer names: its block, when it held the path as a managed-block and
// now names it in another form; the whole text, when it held the path
// owned and now manages a block or keys in it (the file was all the
// module's; as a seed it is kept as it is).
func (s *Server) withoutOldForm(module, at string, f File, t target) ([]byte, error) {
	h, ok := s.state.heldAs(module, at)
	if !ok || h.Form == f.Form || !t.exists() {
		return t.current, nil
	}
	switch {
	case h.Form == FormManagedBlock:
		out, _, err := removeBlock(f.Path, module, t.current)
		return out, err
	case h.Form == FormOwned && (f.Form == FormManagedBlock || f.Form == FormManagedKeys):
		return []byte{}, nil
	}
	return t.current, nil
}

// checkNames refuses a request naming a path twice, or naming both a path
// and a path below it (/x and /x/y: one would have to be a file and a
// directory at once), or a file named as mesh-fill's temp files are (the
// next whole request of the module holding the file beside it, or the
// next start, would sweep it away as a stale one: temps.go), before
// anything is looked at or written.
func checkNames(files []File) error {
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		if seen[f.Path] {
			return refuse("path %q is named twice in the request", f.Path)
		}
		seen[f.Path] = true
		if tempOf(path.Base(f.Path)) != "" {
			return refuse("path %q is named as mesh-fill's temp files are (%q, 16 hex digits): it would be swept away as a stale one", f.Path, tempMark)
		}
	}
	for _, f := range files {
		for d := f.Path; ; {
			i := strings.LastIndexByte(d, '/')
			if i <= 0 {
				break
			}
			d = d[:i]
			if seen[d] {
				return refuse("path %q and path %q are both named in the request: %s would be a file and a directory at once", d, f.Path, d)
			}
		}
	}
	return nil
}

// MaxModuleBytes bounds a module's name (400 past it). The client's
// names are at most nodes/spec.MaxNameBytes bytes encoded as a key token,
// so never longer raw; unbounded, a name as long as a body was carried
// whole into every marker, state file, 409 and log line of the module.
const MaxModuleBytes = 255

// checkModule refuses a module name a managed block's markers cannot
// hold: a control character (a line break would split the marker line)
// or a space at either end (marker lines are matched trimmed, so "a " would
// find module a's block). A space inside the name is fine: SPEC §2.1 lets a
// module's name hold any byte.
func checkModule(m string) error {
	if m == "" {
		return refuse("the request names no module")
	}
	if len(m) > MaxModuleBytes {
		return refuse("module %.40q… is %d bytes long; a module's name is at most %d", m, len(m), MaxModuleBytes)
	}
	if strings.IndexFunc(m, unicode.IsControl) >= 0 {
		return refuse("module %q holds a control character", m)
	}
	if strings.TrimSpace(m) != m {
		return refuse("module %q begins or ends with a space", m)
	}
	return nil
}

func checkOnChange(f File) error {
	oc := f.OnChange
	switch oc.Action {
	case "", OnChangeNone:
	case OnChangeRestart, OnChangeReload:
		if oc.Unit == "" {
			return refuse("path %q: on_change %s names no unit", f.Path, oc.Action)
		}
	default:
		return refuse("path %q: on_change action %q is not restart, reload or none", f.Path, oc.Action)
	}
	if oc.Unit != "" {
		// not an option (--now), and of systemd's alphabet alone: no glob
		// (systemctl matches one against every loaded unit, beyond what
		// --allow-unit matched: app?.service matches app*.service), no
		// space, quote or shell metacharacter (a lab's --on-change-command
		// is often a shell's, and systemctl would refuse the name anyway)
		if strings.HasPrefix(oc.Unit, "-") || len(oc.Unit) > 256 || strings.IndexFunc(oc.Unit, notUnitChar) >= 0 {
			return refuse("path %q: on_change unit %q is not a unit name (systemd's: letters, digits and \"%s\")", f.Path, oc.Unit, unitPunct)
		}
	}
	return nil
}

// unitPunct is what a systemd unit name holds besides ASCII letters and
// digits: "@" a template's, "\\" an escape's (systemd-escape).
const unitPunct = `:-_.@\`

func notUnitChar(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(unitPunct, r))
}

// checkShape refuses (400) a file whose path, form, on_change or mode is out of
// shape, or whose merged content is no text (checkText), whatever is on
// disk (a seed kept too) and whatever the allow-lists say.
func checkShape(f File) error {
	if err := checkPath(f.Path); err != nil {
		return err
	}
	switch f.Form {
	case FormOwned, FormSeed, FormManagedKeys, FormManagedBlock:
	default:
		return refuse("path %q: form %q is not one of owned, seed, managed-keys, managed-block", f.Path, f.Form)
	}
	if err := checkOnChange(f); err != nil {
		return err
	}
	if f.Mode != "" {
		if _, err := parseMode(f.Path, f.Mode); err != nil {
			return err
		}
	}
	if err := checkText(f); err != nil {
		return err
	}
	if f.noContent {
		// SPEC §4.3's content is text, "" for an empty file: a file sent
		// without it (a key misnamed, null) would empty the file on disk
		// and restart its program.
		return refuse("path %q: no content (base64 text, \"\" for an empty file)", f.Path)
	}
	return nil
}

// locate checks p and says where it leads below the root. Confined to a
// --root that is p itself, as no parent directory may be a symlink there
// (so nothing resolves outside the root); without one, a parent may be (on
// a real machine /var/run is a link to /run) and p leads where its
// existing parents' symlinks point. What a path is, to the allow-lists
// (both where it leads and its name must be allowed), to ownership and to
// removal, is where it leads: two names of one file are one path.
func (s *Server) locate(p string) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	if s.Root != "" {
		return p, nil
	}
	at, err := realParents(p)
	if ref := (*refusal)(nil); errors.As(err, &ref) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("path %q: resolving its parent directories: %w", p, err)
	}
	return at, nil
}

// leadsTo is where p leads (locate), or p when that cannot be told (the
// request naming it is refused when planned).
func (s *Server) leadsTo(p string) string {
	if at, err := s.locate(p); err == nil {
		return at
	}
	return p
}

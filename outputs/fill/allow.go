package fill

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// allowed refuses (403) a file whose path is outside Server.Allow or whose
// unit is outside Server.AllowUnits; an empty list allows all. Globs are
// doublestar's: `*` one path element, `**` any depth (see matchPath for a
// trailing `/**`). A path is matched as the request names it, that is
// below Root when one is set, and where it leads as well (allowedAt).
func (s *Server) allowed(f File) error {
	if len(s.Allow) > 0 && !matchAny(s.Allow, f.Path, matchPath) {
		return forbid("path %q is outside the paths mesh-fill may write (--allow %s)", f.Path, strings.Join(s.Allow, " "))
	}
	if u := f.OnChange.Unit; u != "" && !s.unitAllowed(u) {
		return forbid("path %q: unit %q is outside the units mesh-fill may restart or reload (--allow-unit %s)", f.Path, u, strings.Join(s.AllowUnits, " "))
	}
	return nil
}

// unitAllowed says whether mesh-fill may restart or reload unit: it is
// within Server.AllowUnits, or that list is empty.
func (s *Server) unitAllowed(unit string) bool {
	return len(s.AllowUnits) == 0 || matchAny(s.AllowUnits, unit, path.Match)
}

// allowedAt refuses (403) path p when at, where it leads through a parent
// directory's symlink (locate), is outside Server.Allow: the allow-list
// confines where bytes land, not only what a request names.
func (s *Server) allowedAt(p, at string) error {
	if len(s.Allow) > 0 && at != p && !matchAny(s.Allow, at, matchPath) {
		return forbid("path %q leads to %q (a parent directory is a symlink), outside the paths mesh-fill may write (--allow %s)", p, at, strings.Join(s.Allow, " "))
	}
	return nil
}

// matchPath matches an --allow glob against a path. A trailing `/**` is
// the tree below its directory and not the directory itself: doublestar
// lets `/srv/**` match `/srv` (a walk includes its base), but an operator
// confining writes to /srv/** means what lies in /srv, and a file written
// at /srv itself put a file where that tree should be, so that nothing
// below it could be written (every later path "parent /srv is not a
// directory"). So `/srv/**` is matched as `/srv/*/**`: one element or more.
func matchPath(glob, name string) (bool, error) {
	if d, ok := strings.CutSuffix(glob, "/**"); ok {
		glob = d + "/*/**"
	}
	return doublestar.Match(glob, name)
}

// AllowsPath says whether the --allow globs admit path p as mesh-fill
// matches them (an empty list admits all).
func AllowsPath(globs []string, p string) bool {
	return len(globs) == 0 || matchAny(globs, p, matchPath)
}

// ownDir refuses (403) path p when at, where it leads below the root
// (locate), is in mesh-fill's state dir, whatever --allow says: the
// state dir is mesh-fill's own. A module-*.json written there says which
// files root removes at a module's DELETE, a pending-*.json which units it
// restarts at start, and its lock replaced lets a second mesh-fill take
// the dir. Matched by where the paths lead (symlinks resolved, as locate
// and the state dir's own look-up resolve them); a request's plan also
// refuses every directory walked that is the state dir by device and
// inode (dirs.own), which a bind mount of it elsewhere is.
func (s *Server) ownDir(p, at string) error {
	d := s.stateAt
	if d == "" {
		return nil
	}
	if at == d || d == "/" || strings.HasPrefix(at, d+"/") {
		return inStateDir("path %q leads into mesh-fill's state dir %s, which no request may write", p, s.StateDir)
	}
	return nil
}

// inStateDir is the 403 of a path that leads into mesh-fill's state dir
// (ownDir, or a directory walked that is it: dirs.walk).
func inStateDir(format string, args ...any) error {
	return &refusal{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...), stateDir: true}
}

// isInStateDir says whether err is inStateDir's.
func isInStateDir(err error) bool {
	ref, ok := errors.AsType[*refusal](err)
	return ok && ref.stateDir
}

// stateDirApart refuses a state dir that is the root itself (where
// requests write: "/" without one): no request may write into the state
// dir (ownDir), so every request would be refused with a 403, and its lock
// file would be made among the files it serves. The other overlaps serve:
// a state dir below the root leaves the rest of the root writable (what
// leads into the state dir alone is refused), and a root below the state
// dir is reached by no request's path at its top, where the state files
// and the lock are (the ledger reads nothing deeper). Compared by identity
// (symlinks, a bind mount of one at the other's path), as the root and
// the state dir are opened; a state dir not made yet is not the root.
func stateDirApart(root, stateDir string) error {
	if stateDir == "" {
		return nil
	}
	if root == "" {
		root = "/"
	}
	sfi, err := os.Stat(stateDir)
	if err != nil {
		return nil // missing: made at start, so not the root; another error is the lock's to say
	}
	rfi, err := os.Stat(root)
	if err != nil || !os.SameFile(sfi, rfi) {
		return nil
	}
	by := "--root " + root
	if root == "/" {
		by = "the root / (no --root)"
	}
	return fmt.Errorf("--state-dir %s is %s: every request would be refused, as none may write into the state dir; "+
		"give --state-dir a directory outside the root (the default /var/lib/mesh-fill, with --root another) or below it", stateDir, by)
}

// stateDirAt is where the state dir is as a request's path would name it
// (below the root when there is one), "" when no path leads into it (none,
// or outside the root).
func stateDirAt(root, stateDir string) (string, error) {
	if stateDir == "" {
		return "", nil
	}
	d, err := realPath(stateDir)
	if err != nil {
		return "", err
	}
	if root == "" {
		return d, nil
	}
	r, err := realPath(root)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(r, d)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", nil
	}
	return path.Join("/", filepath.ToSlash(rel)), nil
}

// realPath is p absolute, its symlinks resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

func matchAny(globs []string, name string, match func(pattern, name string) (bool, error)) bool {
	for _, g := range globs {
		if ok, _ := match(g, name); ok {
			return true
		}
	}
	return false
}

// CheckAllow says what is wrong with an --allow glob (not absolute, or not
// a glob) or an --allow-unit glob; "" when nothing is.
func CheckAllow(glob string, unit bool) string {
	if unit {
		if _, err := path.Match(glob, ""); err != nil || glob == "" || strings.Contains(glob, "/") {
			return fmt.Sprintf("--allow-unit %q is not a glob of unit names", glob)
		}
		// A unit a request names is of systemd's alphabet alone (plan.go),
		// so a glob holding another character (a comma list, as
		// --allow-uid's, or a space) matches none: every restart a 403.
		if i := strings.IndexFunc(glob, func(r rune) bool { return notUnitChar(r) && !strings.ContainsRune("*?[]!^", r) }); i >= 0 {
			r, _ := utf8.DecodeRuneInString(glob[i:])
			return fmt.Sprintf("--allow-unit %q holds %q, which no unit name holds (letters, digits and \"%s\"; the flag repeats, one glob each)", glob, string(r), unitPunct)
		}
		return ""
	}
	if !strings.HasPrefix(glob, "/") {
		return fmt.Sprintf("--allow %q is not a glob of absolute paths (it must begin with /)", glob)
	}
	if !doublestar.ValidatePattern(glob) {
		return fmt.Sprintf("--allow %q is not a glob: %v (a [ opens a class that a ] must close; \\[ is a literal [)", glob, doublestar.ErrBadPattern)
	}
	// A request's path is refused unless clean (plan.go), so a glob with a
	// trailing slash, "//", "." or ".." matches nothing a request may name:
	// every path the operator meant would be a 403.
	if c := path.Clean(glob); c != glob {
		hint := ""
		if strings.HasSuffix(glob, "/") && c != "/" {
			hint = fmt.Sprintf("; what is below the directory is %q", c+"/**")
		}
		return fmt.Sprintf("--allow %q is not a clean path glob (a request's paths are clean: %q%s)", glob, c, hint)
	}
	return ""
}

package fill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// refusal is a request the server will not carry out, refused before
// anything of it is written: 400 (refuse) when it is out of shape, 403
// (forbid) when it names a path or unit outside the allow-lists, 409
// (conflict) when it names what another module's declaration holds.
type refusal struct {
	status int
	msg    string
	path   string // a path another module holds (409; errorBody.Path)
	holder string // the module holding path (errorBody.Holder)
	key    string // the managed-keys key of path holder holds (errorBody.Key), the path itself shared
	// stateDir: the path leads into mesh-fill's state dir (inStateDir)
	stateDir bool
}

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func forbid(format string, args ...any) error {
	return &refusal{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...)}
}

// keyHeldElsewhere is a 409 for key of the managed-keys file p, which
// module holder's declaration manages (the path is shared; the key is
// not). It names path, key and holder as heldElsewhere does, so the
// client tells its own races with a module that left from a real clash,
// for a key as for a path: before, it said only the text.
func keyHeldElsewhere(p, key, holder, format string, args ...any) error {
	return &refusal{status: http.StatusConflict, msg: fmt.Sprintf(format, args...), path: p, holder: holder, key: key}
}

// heldElsewhere is a 409 for path p, which module holder's declaration holds.
func heldElsewhere(p, holder, format string, args ...any) error {
	return &refusal{status: http.StatusConflict, msg: fmt.Sprintf(format, args...), path: p, holder: holder}
}

// target is one validated file path, taken inside the server's root.
type target struct {
	path    string      // as the request names it
	rel     string      // where it leads (locate), relative to the root, slash separated
	dir     string      // rel's directory, "." at the top
	base    string      // rel's last element
	info    fs.FileInfo // the existing file; nil when absent
	current []byte      // the existing file's bytes; nil when absent or not read
	digest  string      // the existing file's digest, when read for it alone (readDigest)
	acl     bool        // the existing file carries an access ACL (looked at only when its bytes are compared)
	// parent is rel's directory as resolve checked it, open as long as the
	// request's dirs: the file is read, written and removed in it, never
	// by a path looked up again; nil when missing.
	parent *dir
}

func (t *target) exists() bool { return t.info != nil }

// at is where the target's path leads, below the root: the ledger's key.
func (t *target) at() string { return "/" + t.rel }

// Linux's PATH_MAX less its NUL, and NAME_MAX: a longer path could not be
// used by name, and a deeper one held the module's locks for a minute
// while it made a hundred thousand directories.
const (
	maxPathLen = 4095
	maxNameLen = 255
)

// checkPath refuses a path that is not absolute and clean, holds a `..`
// element, names the root directory, or is longer than Linux takes.
func checkPath(p string) error {
	switch {
	case p == "":
		return refuse("a file has no path")
	case strings.ContainsRune(p, 0):
		return refuse("path %q holds a NUL byte", p)
	case !strings.HasPrefix(p, "/"):
		return refuse("path %q is relative; a fill path must be absolute", p)
	}
	if len(p) > maxPathLen {
		return refuse("path %q… is %d bytes long; a fill path is at most %d", p[:64], len(p), maxPathLen)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return refuse("path %q holds a .. element", p)
		}
		if len(el) > maxNameLen {
			return refuse("path %q has an element of %d bytes; a file's name is at most %d", p, len(el), maxNameLen)
		}
	}
	if c := path.Clean(p); c != p {
		return refuse("path %q is not clean (it would be %q)", p, c)
	}
	if p == "/" {
		return refuse("path %q names the root directory, not a file", p)
	}
	return nil
}

// What resolve reads of the file there (its read argument), besides a
// length n ≥ 0: the file only when it is n bytes long (an owned file's
// content is n bytes; another length is a change without a look).
const (
	readText = -1 // the whole text, to merge into: from ds's budget (dirs.take)
	readNone = -2 // nothing: an owned file removed
)

// resolve reads what is now at at, where path p leads (locate, or the
// ledger's key of a file written). The target must not be a symlink and,
// when there, must be a regular file; no parent directory of at may be a
// symlink. Its directory is kept open in ds (there), for the request's
// other files and for its write. What it reads of the file is read says
// (readText, readNone, readDigest, or a length): one who may write the directory can
// put there a sparse file of any size for no disk at all, which read whole
// grew mesh-fill until the OOM killer ended it, or another program.
func resolve(ds *dirs, p, at string, read int64) (target, error) {
	if err := checkPath(at); err != nil {
		return target{}, err
	}
	rel := strings.TrimPrefix(at, "/")
	t := target{path: p, rel: rel, dir: path.Dir(rel), base: path.Base(rel)}

	dir, err := ds.there(t.dir)
	if err != nil {
		return target{}, fmt.Errorf("path %q: %w", p, err)
	}
	if dir == nil {
		return t, nil // a parent missing: the rest is made by the write
	}
	t.parent = dir
	st, err := dir.lstat(t.base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return target{}, fmt.Errorf("path %q: %w", p, err)
	case isSymlink(st):
		return target{}, refuse("path %q is a symlink", p)
	case !isRegular(st):
		return target{}, refuse("path %q is not a regular file", p)
	}
	// swapped since the look (for a symlink, a fifo, another file), what
	// is there is not read: the file read must be the file looked at
	if beforeOpen != nil {
		beforeOpen(rel)
	}
	f, fi, err := dir.openFile(t.base, st)
	if changedSince(err) {
		return target{}, refuse("path %q changed while being read", p)
	}
	if err != nil {
		return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
	}
	defer f.Close()
	t.info = fi
	owned := read >= 0 // an owned file as long as its content, compared with it
	switch {
	case read == readNone, read >= 0 && fi.Size() != read:
		return t, nil
	case read == readDigest:
		if t.digest, err = ds.digests.of(at, f, fi); err != nil {
			return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
		}
		return t, nil
	case read == readText:
		if err := ds.take(fi.Size()); err != nil {
			return target{}, fmt.Errorf("path %q: %w", p, err)
		}
		read = fi.Size()
	}
	// no more than its size said: a file growing meanwhile is not followed
	cur, err := io.ReadAll(io.LimitReader(f, read))
	if err != nil {
		return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
	}
	t.current = cur
	if owned {
		t.acl = carriesACL(f)
	}
	return t, nil
}

// beforeOpen, when set (by a test), is called between the look at a
// directory (openIn) or a file (resolve) and its opening, with its path
// relative to the root.
var beforeOpen func(rel string)

// openIn opens el, the directory at (relative to the root) in cur, which
// must be a real directory and no symlink; nil and no error when it is
// missing. One who may write cur may swap the directory for another, a
// symlink or a fifo between the look and the open: what is opened must be
// the directory looked at, or it is refused, and the open neither follows
// a symlink nor waits on a fifo (dir.openDir).
func openIn(cur *dir, at, el string) (*dir, error) {
	st, err := cur.lstat(el)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("looking at parent /%s: %w", at, err)
	case isSymlink(st):
		return nil, refuse("parent directory /%s is a symlink", at)
	case !isDir(st):
		return nil, refuse("parent /%s is not a directory", at)
	}
	if beforeOpen != nil {
		beforeOpen(at)
	}
	next, err := cur.openDir(el)
	switch {
	case changedSince(err):
		return nil, refuse("parent directory /%s changed while being opened", at)
	case err != nil:
		return nil, fmt.Errorf("opening parent /%s: %w", at, err)
	case !next.is(st):
		next.close()
		return nil, refuse("parent directory /%s changed while being opened", at)
	}
	return next, nil
}

// realParents resolves the symlinks among p's existing parent directories
// (not p itself): /var/run/app.pid becomes /run/app.pid where /var/run
// links to /run. Used without --root only.
func realParents(p string) (string, error) {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			real, err := filepath.EvalSymlinks(d)
			if err != nil {
				if _, serr := os.Stat(d); errors.Is(serr, syscall.ELOOP) {
					// the request's to mend, not mesh-fill's failure
					return "", refuse("path %q: its parent %s is a symbolic link loop (too many levels of symbolic links): "+
						"point the link at a directory, or name another path", p, d)
				}
				return "", err
			}
			return filepath.ToSlash(filepath.Join(real, strings.TrimPrefix(p, d))), nil
		}
		if d == "/" {
			return p, nil
		}
	}
}

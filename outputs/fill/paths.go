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
}

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func forbid(format string, args ...any) error {
	return &refusal{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &refusal{status: http.StatusConflict, msg: fmt.Sprintf(format, args...)}
}

// target is one validated file path, taken inside the server's root.
type target struct {
	path    string      // as the request names it
	rel     string      // where it leads (locate), relative to the root, slash separated
	dir     string      // rel's directory, "." at the top
	base    string      // rel's last element
	info    fs.FileInfo // the existing file; nil when absent
	current []byte      // the existing file's bytes; nil when absent
	// parent is rel's directory as resolve checked it (openParents), open
	// as long as the dirs it is kept in (or the root): removal acts in it,
	// never by a path looked up again; nil when missing.
	parent *os.Root
}

func (t *target) exists() bool { return t.info != nil }

// at is where the target's path leads, below the root: the ledger's key.
func (t *target) at() string { return "/" + t.rel }

// checkPath refuses a path that is not absolute and clean, holds a `..`
// element or names the root directory.
func checkPath(p string) error {
	switch {
	case p == "":
		return refuse("a file has no path")
	case strings.ContainsRune(p, 0):
		return refuse("path %q holds a NUL byte", p)
	case !strings.HasPrefix(p, "/"):
		return refuse("path %q is relative; a fill path must be absolute", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return refuse("path %q holds a .. element", p)
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

// resolve reads what is now at at, where path p leads (locate, or the
// ledger's key of a file written). The target must not be a symlink and,
// when there, must be a regular file; no parent directory of at may be a
// symlink.
//
// The parents are walked one directory at a time, each opened in the one
// before, so a path's cost grows with its depth, not with its square (each
// lookup of a whole path by os.Root walks every element again); dirs keeps
// each target directory found, open, for the request's other files.
func resolve(root *os.Root, p, at string, dirs map[string]*os.Root) (target, error) {
	if err := checkPath(at); err != nil {
		return target{}, err
	}
	rel := strings.TrimPrefix(at, "/")
	t := target{path: p, rel: rel, dir: path.Dir(rel), base: path.Base(rel)}

	dir, err := openParents(root, p, t.dir, dirs)
	if err != nil || dir == nil {
		return t, err // an error, or a parent missing: the rest is created
	}
	t.parent = dir
	fi, err := dir.Lstat(t.base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return target{}, fmt.Errorf("path %q: %w", p, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return target{}, refuse("path %q is a symlink", p)
	case !fi.Mode().IsRegular():
		return target{}, refuse("path %q is not a regular file", p)
	}
	// opening follows a symlink swapped in since the look (not blocking
	// on a fifo): what is read must be the file looked at
	if beforeOpen != nil {
		beforeOpen(rel)
	}
	f, err := dir.OpenFile(t.base, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil && !os.SameFile(fi, st) {
		return target{}, refuse("path %q changed while being read", p)
	}
	var cur []byte
	if err == nil {
		cur, err = io.ReadAll(f)
	}
	if err != nil {
		return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
	}
	t.info, t.current = fi, cur
	return t, nil
}

// openParents opens dir (relative to root, "." at the top) one element at
// a time, each a real directory and no symlink (openIn), and keeps it in
// dirs; nil and no error when an element is missing.
func openParents(root *os.Root, p, dir string, dirs map[string]*os.Root) (*os.Root, error) {
	if dir == "." {
		return root, nil
	}
	if r, ok := dirs[dir]; ok {
		return r, nil
	}
	cur := root
	for i, el := 0, ""; i < len(dir); i += len(el) + 1 {
		el, _, _ = strings.Cut(dir[i:], "/")
		next, err := openIn(cur, dir[:i+len(el)], el)
		if cur != root {
			cur.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
		if next == nil {
			return nil, nil
		}
		cur = next
	}
	dirs[dir] = cur
	return cur, nil
}

// beforeOpen, when set (by a test), is called between the look at a
// directory (openIn) or a file (resolve) and its opening, with its path
// relative to the root.
var beforeOpen func(rel string)

// openIn opens el, the directory dir (relative to the root) of cur, which
// must be a real directory and no symlink; nil and no error when it is
// missing. Opening follows a symlink, and one who may write cur may swap
// the directory for one between the look and the open: what is opened must
// be the directory looked at, or it is refused.
func openIn(cur *os.Root, dir, el string) (*os.Root, error) {
	fi, err := cur.Lstat(el)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("looking at parent /%s: %w", dir, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, refuse("parent directory /%s is a symlink", dir)
	case !fi.IsDir():
		return nil, refuse("parent /%s is not a directory", dir)
	}
	if beforeOpen != nil {
		beforeOpen(dir)
	}
	next, err := cur.OpenRoot(el)
	if err != nil {
		return nil, fmt.Errorf("opening parent /%s: %w", dir, err)
	}
	st, err := next.Stat(".")
	switch {
	case err != nil:
		err = fmt.Errorf("opening parent /%s: %w", dir, err)
	case !os.SameFile(fi, st):
		err = refuse("parent directory /%s changed while being opened", dir)
	}
	if err != nil {
		next.Close()
		return nil, err
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
				return "", err
			}
			return filepath.ToSlash(filepath.Join(real, strings.TrimPrefix(p, d))), nil
		}
		if d == "/" {
			return p, nil
		}
	}
}

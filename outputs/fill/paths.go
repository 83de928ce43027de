package fill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// refusal is a request the server will not carry out; it answers 400.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// target is one validated file path, taken inside the server's root.
type target struct {
	path    string      // as the request names it
	rel     string      // relative to the root, slash separated
	dir     string      // rel's directory, "." at the top
	base    string      // rel's last element
	info    fs.FileInfo // the existing file; nil when absent
	current []byte      // the existing file's bytes; nil when absent
}

func (t *target) exists() bool { return t.info != nil }

// resolve checks p and reads what is there now. A path must be absolute and
// clean with no `..` element; the target must not be a symlink and, when
// there, must be a regular file. Confined to a --root, no parent directory
// may be a symlink either (so nothing resolves outside the root); without
// one, a parent may be (on a real machine /var/run is a link to /run).
func resolve(root *os.Root, p string, confined bool, dirsOK map[string]bool) (target, error) {
	switch {
	case p == "":
		return target{}, refuse("a file has no path")
	case strings.ContainsRune(p, 0):
		return target{}, refuse("path %q holds a NUL byte", p)
	case !strings.HasPrefix(p, "/"):
		return target{}, refuse("path %q is relative; a fill path must be absolute", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return target{}, refuse("path %q holds a .. element", p)
		}
	}
	if c := path.Clean(p); c != p {
		return target{}, refuse("path %q is not clean (it would be %q)", p, c)
	}
	if p == "/" {
		return target{}, refuse("path %q names the root directory, not a file", p)
	}
	walk := p
	if !confined {
		var err error
		if walk, err = realParents(p); err != nil {
			return target{}, fmt.Errorf("path %q: resolving its parent directories: %w", p, err)
		}
	}
	rel := strings.TrimPrefix(walk, "/")
	t := target{path: p, rel: rel, dir: path.Dir(rel), base: path.Base(rel)}

	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		prefix := strings.Join(parts[:i], "/")
		if dirsOK[prefix] {
			continue // a real directory, seen for another file of the request
		}
		fi, err := root.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			break // the rest is created
		}
		if err != nil {
			return target{}, fmt.Errorf("path %q: looking at parent /%s: %w", p, prefix, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return target{}, refuse("path %q: parent directory /%s is a symlink", p, prefix)
		}
		if !fi.IsDir() {
			return target{}, refuse("path %q: parent /%s is not a directory", p, prefix)
		}
		dirsOK[prefix] = true
	}

	fi, err := root.Lstat(rel)
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
	cur, err := root.ReadFile(rel)
	if err != nil {
		return target{}, fmt.Errorf("path %q: reading the file there: %w", p, err)
	}
	t.info, t.current = fi, cur
	return t, nil
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

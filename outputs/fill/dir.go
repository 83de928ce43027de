package fill

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// dir is an open directory, and each name given to its methods is one
// path element taken in it alone: no symlink is followed (O_NOFOLLOW), and
// no open can leave mesh-fill waiting on a named pipe swapped in by one who
// may write the directory (a directory is opened O_DIRECTORY, which
// refuses anything else before opening it; a file O_NONBLOCK, and then
// refused by fstat unless it is a regular file). A request that hung would
// hold its module's and its paths' locks, and every later request of them
// with it. (os.Root opens a directory with neither, and follows a symlink
// that stays inside it.)
type dir struct {
	f   *os.File
	dev uint64 // the filesystem it is on
	ino uint64
}

// openRootDir opens the server's root: the one path looked up whole, its
// symlinks followed, as it is the operator's.
func openRootDir(p string) (*dir, error) {
	fd, err := openat(unix.AT_FDCWD, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return newDir(fd, p)
}

// errRootGone is a root held (holdRoot) that its path no longer names.
var errRootGone = errors.New("is no longer the directory mesh-fill started with (removed, moved or replaced since): nothing of the request is written; put it back, or restart mesh-fill to take the directory there now")

// again is a new handle on d, the root held, for one request (which
// closes it). The request is refused (errRootGone) unless d's path p
// still names d: the writes go to d whatever p names now, but a root
// moved or swapped is the operator's to know of, not to be written into
// unseen.
func (d *dir) again(p string) (*dir, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Stat(p, &st) }); err != nil || !d.is(st) {
		return nil, errRootGone
	}
	fd, err := openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: p, Err: err}
	}
	return newDir(fd, p)
}

// newDir takes fd, an open directory, with its identity.
func newDir(fd int, name string) (*dir, error) {
	var st unix.Stat_t
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	return &dir{f: os.NewFile(uintptr(fd), name), dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

func (d *dir) fd() int { return int(d.f.Fd()) }

func (d *dir) close() error { return d.f.Close() }

// sync fsyncs the directory, through this handle.
func (d *dir) sync() error { return d.f.Sync() }

// lstat looks at name, a symlink not followed.
func (d *dir) lstat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := ignoringEINTR(func() error { return unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	if err != nil {
		return st, &fs.PathError{Op: "fstatat", Path: name, Err: err}
	}
	return st, nil
}

// openDir opens the directory name. A symlink there is ELOOP or ENOTDIR,
// anything else that is not a directory ENOTDIR, neither of them opened
// (changedSince reports either).
func (d *dir) openDir(name string) (*dir, error) {
	fd, err := openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return newDir(fd, name)
}

// errChanged is a file or directory opened that is not the one looked at:
// swapped since for another, or for a symlink, a fifo or the like.
var errChanged = errors.New("not the one looked at")

// changedSince says an open, or its check, found something other than
// what was looked at.
func changedSince(err error) bool {
	return errors.Is(err, errChanged) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)
}

// openFile opens the regular file name to read, and makes sure it is the
// one looked at (errChanged). Its FileInfo is what was opened.
func (d *dir) openFile(name string, looked unix.Stat_t) (*os.File, fs.FileInfo, error) {
	f, st, err := d.openRegular(name)
	if err != nil {
		return nil, nil, err
	}
	if !sameFile(st, looked) {
		f.Close()
		return nil, nil, &fs.PathError{Op: "openat", Path: name, Err: errChanged}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// reopen opens name, a file written through a handle now closed, and
// makes sure it is that file (errChanged), not one swapped in since.
func (d *dir) reopen(name string, written fs.FileInfo) (*os.File, error) {
	f, _, err := d.openRegular(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !os.SameFile(fi, written) {
		err = &fs.PathError{Op: "openat", Path: name, Err: errChanged}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openRegular opens name to read, a regular file or an error (errChanged
// for anything else): opened O_NONBLOCK, a fifo swapped in does not wait
// for a writer, and its fstat refuses it before anything reads it.
func (d *dir) openRegular(name string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openat(d.fd(), name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, st, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	if err := fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	if !isRegular(st) {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "openat", Path: name, Err: errChanged}
	}
	return os.NewFile(uintptr(fd), name), st, nil
}

// create makes name, a new file (O_EXCL: never one there, nor a symlink's
// target), open to write.
func (d *dir) create(name string, mode fs.FileMode) (*os.File, error) {
	fd, err := openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (d *dir) mkdir(name string, mode fs.FileMode) error {
	if err := ignoringEINTR(func() error { return unix.Mkdirat(d.fd(), name, uint32(mode.Perm())) }); err != nil {
		return &fs.PathError{Op: "mkdirat", Path: name, Err: err}
	}
	return nil
}

// setMade gives a directory mesh-fill just made (d) the mode and owner
// every such directory has: 0755, root's, whatever this process's umask
// and group. Left to them, the example unit (UMask=0007, Group=mesh-fill)
// made 0750 directories of the group it shares its socket with the
// client through: its members could list them, and a service user could
// not reach the file planned for it inside. Set on the handle, so it is
// the directory made that changes, whatever is at its path now; the owner
// only when this process may chown (root).
func (d *dir) setMade() error {
	if err := ignoringEINTR(func() error { return unix.Fchmod(d.fd(), 0o755) }); err != nil {
		return &fs.PathError{Op: "fchmod", Path: d.f.Name(), Err: err}
	}
	if !canChown() {
		return nil
	}
	if err := ignoringEINTR(func() error { return unix.Fchown(d.fd(), 0, 0) }); err != nil {
		return &fs.PathError{Op: "fchown", Path: d.f.Name(), Err: err}
	}
	return nil
}

// rename renames from to to, both in this directory.
func (d *dir) rename(from, to string) error {
	if err := ignoringEINTR(func() error { return unix.Renameat(d.fd(), from, d.fd(), to) }); err != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: err}
	}
	return nil
}

// remove removes name, a file (or a symlink, not followed).
func (d *dir) remove(name string) error {
	if err := ignoringEINTR(func() error { return unix.Unlinkat(d.fd(), name, 0) }); err != nil {
		return &fs.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}

// is says the directory is the one st looked at.
func (d *dir) is(st unix.Stat_t) bool { return d.dev == uint64(st.Dev) && d.ino == uint64(st.Ino) }

func sameFile(a, b unix.Stat_t) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

func isSymlink(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
func isDir(st unix.Stat_t) bool     { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
func isRegular(st unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

func openat(at int, name string, flags int, mode uint32) (fd int, err error) {
	err = ignoringEINTR(func() error { fd, err = unix.Openat(at, name, flags, mode); return err })
	return fd, err
}

func fstat(fd int, st *unix.Stat_t) error {
	return ignoringEINTR(func() error { return unix.Fstat(fd, st) })
}

// ignoringEINTR retries fn while a signal interrupts it.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// names lists the directory's names, through a handle of its own opened
// in it (the directory's offset is not the request's to move).
func (d *dir) names() ([]string, error) {
	fd, err := openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: d.f.Name(), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.f.Name())
	defer f.Close()
	return f.Readdirnames(-1)
}

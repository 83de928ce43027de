package fill

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync"
	"sync/atomic"
)

// temp is one step's temp file, from its making to its rename.
type temp struct {
	dir  *dir     // the target's directory
	name string   // the temp file's name there
	f    *os.File // open until synced
	// written is the temp file as written, taken as it is closed before a
	// syncfs, so the fsync that stands in for a refused one (fsyncTemp)
	// syncs the very file written, not whatever its name leads to then.
	written fs.FileInfo
}

// openTemp makes a temp file beside base named by tempName; O_EXCL so two
// writers never share one.
func openTemp(dir *dir, base string, mode fs.FileMode) (string, *os.File, error) {
	for attempt := 0; ; attempt++ {
		name := tempName(base)
		f, err := dir.create(name, mode)
		if !errors.Is(err, fs.ErrExist) || attempt == 100 {
			return name, f, err
		}
	}
}

// makeTemp writes one step's bytes to a new temp file in its target's
// directory (made 0600), then sets its owner and its mode, and with writeback starts the
// disk's writeback (for the fsync that follows). A temp file made is
// returned even with an error, to be removed.
func makeTemp(ds *dirs, st step, writeback bool) (*temp, error) {
	p := st.file.Path
	dir, err := ds.get(st.t.dir)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", p, err)
	}
	// made for this process alone: it holds the request's bytes (a secret
	// maybe) before its owner is set, and its maker's group (mesh-fill's,
	// or a setgid directory's) must not open it meanwhile and keep the
	// descriptor; its mode is set once its owner is
	name, f, err := openTemp(dir, st.t.base, 0o600)
	if err != nil {
		return nil, fmt.Errorf("path %q: making the temp file: %w", p, err)
	}
	tmp := &temp{dir: dir, name: name, f: f}
	// no ACL of its directory's default: the mode set below is all there
	// is (acl_linux.go)
	if err := dropACL(f); err != nil {
		return tmp, fmt.Errorf("path %q: removing the ACL the temp file took from its directory's default ACL: %w", p, err)
	}
	if _, err := f.Write(st.want); err != nil {
		return tmp, fmt.Errorf("path %q: writing the temp file: %w", p, err)
	}
	if tempWritten != nil {
		tempWritten(f)
	}
	if st.uid >= 0 || st.gid >= 0 {
		if err := f.Chown(st.uid, st.gid); err != nil {
			return tmp, fmt.Errorf("path %q: setting owner %d and group %d: %w", p, st.uid, st.gid, err)
		}
	}
	// the umask may have narrowed the mode it was made with, and a chown may
	// clear mode bits on some systems
	if err := f.Chmod(st.mode); err != nil {
		return tmp, fmt.Errorf("path %q: setting mode %04o: %w", p, st.mode, err)
	}
	if writeback {
		startWriteback(f)
	}
	return tmp, nil
}

// tempWritten, when set (by a test), is called with each temp file once
// its bytes are written, before its owner and mode are set.
var tempWritten func(f *os.File)

// syncTemp fsyncs and closes a temp file.
func syncTemp(tmp *temp, p string) error {
	err := tmp.f.Sync()
	if cerr := tmp.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	tmp.f = nil
	if err != nil {
		return fmt.Errorf("path %q: syncing the temp file: %w", p, err)
	}
	return nil
}

// closeTemp closes a temp file that syncFilesystems will flush, taking
// what it is first (for fsyncTemp).
func closeTemp(tmp *temp, p string) error {
	var err error
	tmp.written, err = tmp.f.Stat()
	if cerr := tmp.f.Close(); err == nil {
		err = cerr
	}
	tmp.f = nil
	if err != nil {
		return fmt.Errorf("path %q: closing the temp file: %w", p, err)
	}
	return nil
}

// remove closes and removes a temp file not renamed; there is nothing to do
// about an error here.
func (tmp *temp) remove() {
	if tmp.f != nil {
		tmp.f.Close()
	}
	tmp.dir.remove(tmp.name)
}

// writers is how many files of one request are made or fsynced at once:
// each fsync waits on the disk, and a disk serves several at a time (16 or
// 32 fsyncs at once measured no faster than 8).
const writers = 8

// batch bounds the temp files of one request open at once (each is closed
// once synced), so a request of thousands of files holds no thousands of fds.
const batch = 256

// each calls fn(0) .. fn(n-1), writers at once, and returns when all have.
func each(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(writers, n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// writeAll writes every step that changes its file, in phases, so the disk
// serves a request's flushes together rather than one file after another:
// every file's bytes go to a temp file beside it (mode and owner set), then
// every temp file is made durable, then each is renamed over its file, then
// the directories renamed into are made durable, so the renames last
// (where it fsyncs, the parent of a directory made is fsynced as it is
// made: makeDir). A request writing fewer than syncFSFrom files (or any, when
// syncFSFrom ≤ 0 or there is no syncfs) fsyncs each temp file and each
// directory; a larger one flushes each filesystem it writes to with one
// syncfs before the renames and one after (see Server.SyncFSFrom).
//
// A failure before the renames renames nothing: every temp file is removed
// and the request's files are all as they were (directories made for them
// stay). A rename that fails stops the renames there: the files before it
// in the request are replaced, the rest are not. The error is the first in
// the request's order.
//
// The directories are ds's: those the request's plan opened (and checked
// and read in), and those missing then, made here.
func writeAll(ds *dirs, steps []step, syncFSFrom int) error {
	var todo []int // the steps that write
	for i, st := range steps {
		if st.write {
			todo = append(todo, i)
		}
	}
	wholeFS := canSyncFS && syncFSFrom > 0 && len(todo) >= syncFSFrom && !syncFSRefused.Load()
	ds.fsyncMade = !wholeFS
	errs := make([]error, len(steps))
	temps := make([]*temp, len(steps))
	renamed := 0 // todo[:renamed] are in place
	defer func() {
		for _, i := range todo[renamed:] {
			if temps[i] != nil {
				temps[i].remove()
			}
		}
	}()

	for lo := 0; lo < len(todo); lo += batch {
		part := todo[lo:min(lo+batch, len(todo))]
		each(len(part), func(j int) {
			i := part[j]
			temps[i], errs[i] = makeTemp(ds, steps[i], !wholeFS)
		})
		if err := firstErr(errs); err != nil {
			return err
		}
		each(len(part), func(j int) {
			i := part[j]
			if wholeFS {
				errs[i] = closeTemp(temps[i], steps[i].file.Path)
			} else {
				errs[i] = syncTemp(temps[i], steps[i].file.Path)
			}
		})
		if err := firstErr(errs); err != nil {
			return err
		}
	}
	if wholeFS {
		syncFilesystems(ds, steps, todo, errs, "syncing the temp file's filesystem")
		if refused(errs) {
			// a seccomp filter or the like: each temp file fsynced instead,
			// and no request of this process tries syncfs again
			syncFSRefused.Store(true)
			wholeFS = false
			clear(errs)
			each(len(todo), func(j int) {
				i := todo[j]
				errs[i] = fsyncTemp(temps[i], steps[i].file.Path)
			})
		}
		if err := firstErr(errs); err != nil {
			return err
		}
	}

	for _, i := range todo {
		st := steps[i]
		if err := temps[i].dir.rename(temps[i].name, st.t.base); err != nil {
			errs[i] = fmt.Errorf("path %q: replacing the file: %w", st.file.Path, err)
			break
		}
		renamed++
	}
	if wholeFS {
		// a directory made is on the filesystem of the one made in it
		syncFilesystems(ds, steps, todo[:renamed], errs, "syncing the filesystem of its directory")
		return firstErr(errs)
	}

	// each directory once, its error told on the first file renamed into it
	var syncs []string
	syncFor := map[string]int{}
	for _, i := range todo[:renamed] {
		if dir := steps[i].t.dir; !hasKey(syncFor, dir) {
			syncFor[dir] = i
			syncs = append(syncs, dir)
		}
	}
	dirErrs := make([]error, len(syncs))
	each(len(syncs), func(j int) {
		dirErrs[j] = temps[syncFor[syncs[j]]].dir.sync() // the directory renamed in, not its path again
	})
	for j, err := range dirErrs {
		if i := syncFor[syncs[j]]; err != nil && errs[i] == nil {
			errs[i] = fmt.Errorf("path %q: syncing directory %s: %w", steps[i].file.Path, path.Join("/", syncs[j]), err)
		}
	}
	return firstErr(errs)
}

// syncFSRefused is set once a syncfs was refused (not supported, or not
// permitted): every request after it fsyncs each file.
var syncFSRefused atomic.Bool

// refused says a syncfs of the request was refused rather than failed.
func refused(errs []error) bool {
	for _, err := range errs {
		if errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrPermission) {
			return true
		}
	}
	return false
}

// fsyncTemp fsyncs a closed temp file, opened again by its name in its
// directory: one who may write there may have swapped it since, for a
// fifo (waited on forever, were it opened as it comes), a symlink or
// another file; what is opened must be the temp file written, or it is
// an error.
func fsyncTemp(tmp *temp, p string) error {
	f, err := tmp.dir.reopen(tmp.name, tmp.written)
	if changedSince(err) {
		return fmt.Errorf("path %q: syncing the temp file: %s is not the file written (replaced since)", p, tmp.name)
	}
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("path %q: syncing the temp file: %w", p, err)
	}
	return nil
}

// syncFilesystems flushes the filesystems of the directories the given
// steps write into, and sets a failure on the first step of each
// directory whose filesystem failed (unless that step failed already).
func syncFilesystems(ds *dirs, steps []step, which []int, errs []error, doing string) {
	var names []string
	firstIn := map[string]int{}
	for _, i := range which {
		if _, ok := firstIn[steps[i].t.dir]; !ok {
			firstIn[steps[i].t.dir] = i
			names = append(names, steps[i].t.dir)
		}
	}
	for dir, err := range ds.flush(names) {
		if i := firstIn[dir]; errs[i] == nil {
			errs[i] = fmt.Errorf("path %q: %s: %w", steps[i].file.Path, doing, err)
		}
	}
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

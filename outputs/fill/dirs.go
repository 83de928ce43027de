package fill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// dirs are the directories one request works in, each opened once and
// kept open until the request ends: those there when it is planned are
// opened by its plan (resolve, through there), those missing are made by
// its write (get). What the plan checked and read in a directory is
// written, replaced and removed in that same directory, never in one its
// path leads to when looked up again: one who may write a parent could
// swap it, between the two, for another directory (root's, say) that the
// write would then fill with what the plan read from theirs.
type dirs struct {
	root *dir
	mu   sync.Mutex
	open map[string]*dir // by their path below the root, "." the root
	// order is open's directories in the order opened, the root first,
	// for flush.
	order []*dir
	errs  map[string]error // what get could not make or open
	// fsyncMade: fsync the directory a new one is made in, as it is made
	// (writeAll: a request that fsyncs, rather than flush each filesystem).
	fsyncMade bool
	// read is how many bytes of the files there the request has read to
	// merge into (take).
	read int64
	// own, when set, is mesh-fill's state dir, by device and inode: no
	// directory walked may be it (walk), whatever path leads there.
	own *stateID
	// digests, when set, keeps the digests of seed files read (readDigest).
	digests *digestCache
}

// stateID is the state dir's identity and its path, for the refusal.
type stateID struct {
	dev, ino uint64
	path     string
}

// maxRead bounds the bytes of the files there one request reads to merge
// into (managed-keys, managed-block, seed): as much as a request may
// carry. Its files' own texts are no larger, and a legitimate
// configuration file is far smaller. A variable for a test to make it
// small.
var maxRead int64 = MaxBody

// take counts n more bytes read for the request, or refuses (400) a file
// of n bytes that would take it past maxRead.
func (d *dirs) take(n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n > maxRead-d.read {
		return refuse("the file there is %d bytes; mesh-fill reads at most %d bytes of the files one request merges into (%d read already)", n, int64(maxRead), d.read)
	}
	d.read += n
	return nil
}

// openDirs opens the server's root, "/" without one, for a request: a
// handle of its own on the directory Serve holds (holdRoot), never the
// root's path looked up again.
func (s *Server) openDirs() (*dirs, error) {
	p := s.rootPath()
	var root *dir
	var err error
	if s.rootDir != nil {
		root, err = s.rootDir.again(p)
	} else { // Handler served without Serve (tests)
		root, err = openRootDir(p)
	}
	if errors.Is(err, errRootGone) {
		return nil, fmt.Errorf("root %s %w", p, err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening root %s: %w", p, err)
	}
	// own: by identity, so no request writes, removes or sweeps there
	// whatever path leads there (ownDir goes by where paths lead, which a
	// bind mount hides)
	return &dirs{root: root, open: map[string]*dir{".": root}, order: []*dir{root}, errs: map[string]error{},
		own: s.state.takenID()}, nil
}

func (s *Server) rootPath() string {
	if s.Root == "" {
		return "/"
	}
	return s.Root
}

// holdRoot opens the root, for Serve to hold until it returns: every
// request works below that directory, the one --root named at start. Its
// path is looked up whole (its symlinks followed: it is the operator's)
// once, here. Looked up at each request, one who may write the root's
// parent could move the root away and put there a symlink to a directory
// of their choice (root's /etc), and the next request was written there.
func (s *Server) holdRoot() (letGo func(), err error) {
	d, err := openRootDir(s.rootPath())
	if err != nil {
		return nil, err
	}
	s.rootDir = d
	return func() { d.close() }, nil
}

// there is the directory rel (relative to the root, "." at the top), if it
// is there and is a real directory, no element of it a symlink (openIn);
// nil and no error when an element is missing (get makes it).
func (d *dirs) there(rel string) (*dir, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.walk(rel, false)
}

// get is the directory rel to write into, made 0755 with its parents when
// missing; its error is kept, for the request's other files in it.
func (d *dirs) get(rel string) (*dir, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err, ok := d.errs[rel]; ok {
		return nil, err
	}
	r, err := d.walk(rel, true)
	if err != nil {
		d.errs[rel] = err
	}
	return r, err
}

// walk opens rel one element at a time, each in the one before (so its
// cost grows with its depth, not its square), each checked by openIn, and
// keeps it open; making, a missing element is made, else nil is returned. Only rel is kept: the directories on the way are closed.
func (d *dirs) walk(rel string, making bool) (*dir, error) {
	if r, ok := d.open[rel]; ok {
		return r, nil
	}
	cur := d.root
	for i, el := 0, ""; i < len(rel); i += len(el) + 1 {
		el, _, _ = strings.Cut(rel[i:], "/")
		next, err := openIn(cur, rel[:i+len(el)], el)
		if next == nil && err == nil && making {
			next, err = d.makeDir(cur, rel[:i+len(el)], el)
		}
		if cur != d.root {
			cur.close()
		}
		if err != nil || next == nil {
			return nil, err
		}
		if o := d.own; o != nil && next.dev == o.dev && next.ino == o.ino {
			next.close()
			return nil, inStateDir("/%s is mesh-fill's state dir %s (the same directory, by device and inode: a bind mount or another name of it), "+
				"which no request may write", rel[:i+len(el)], o.path)
		}
		cur = next
	}
	d.open[rel] = cur
	d.order = append(d.order, cur)
	return cur, nil
}

// makeDir makes el, the directory at (relative to the root), in cur, and
// opens it (openIn). In a request that fsyncs, cur is fsynced at once, or
// the new entry could be lost in a crash; the directory written into is
// fsynced after its renames.
func (d *dirs) makeDir(cur *dir, at, el string) (*dir, error) {
	err := cur.mkdir(el, 0o755)
	made := err == nil
	if err == nil && d.fsyncMade {
		err = cur.sync()
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("making its directory: %w", err)
	}
	next, err := openIn(cur, at, el)
	if next == nil && err == nil {
		err = fmt.Errorf("opening its directory: %w", fs.ErrNotExist) // removed as soon as made
	}
	if made && err == nil {
		if err = next.setMade(); err != nil {
			next.close()
			return nil, fmt.Errorf("making its directory: %w", err)
		}
	}
	return next, err
}

// flush syncs, once each, the filesystems the given directories (opened by
// there or get) are on, through the first directory of each opened in this
// request, before anything of it was written: syncfs then also reports a
// writeback error of any file written since. It returns each directory's
// error, nil for all when none.
func (d *dirs) flush(names []string) map[string]error {
	d.mu.Lock()
	defer d.mu.Unlock()
	first := map[uint64]*os.File{} // filesystem → its first directory opened
	for _, h := range d.order {
		if _, ok := first[h.dev]; !ok {
			first[h.dev] = h.f
		}
	}
	errOf := map[uint64]error{}
	var errs map[string]error
	for _, name := range names {
		h, ok := d.open[name]
		if !ok {
			continue
		}
		err, done := errOf[h.dev]
		if !done {
			err = syncFS(first[h.dev])
			errOf[h.dev] = err
		}
		if err != nil {
			if errs == nil {
				errs = map[string]error{}
			}
			errs[name] = err
		}
	}
	return errs
}

func (d *dirs) close() {
	for _, h := range d.order {
		h.close()
	}
}

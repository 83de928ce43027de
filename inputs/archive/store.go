package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/google/renameio/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Store fetches, checks, caches and reads templates archives. The zero value
// with Dir set is ready; it is safe for concurrent use.
type Store struct {
	// Dir is the state directory; archives are kept as
	// Dir/templates/<hex digest>.tar (the bytes as fetched, gzipped or not).
	// Empty: no disk cache, memory only.
	Dir string
	// JS reads obj:// refs. Nil: an obj:// ref fails with that reason.
	JS jetstream.JetStream
	// Root, when set (an absolute directory), confines file:// refs: a path
	// not below it fails with ErrOutsideRoot, and one that leaves it through
	// a symbolic link is refused (it is opened through an os.Root). Empty:
	// a file:// ref may name any file the daemon can read.
	Root string
	// CacheFailed, when set, is told why an archive fetched and checked
	// could not be kept under Dir (the error names the ref and the cause).
	// Get returns the archive all the same, from memory: the cache only
	// spares a restart the fetch. It is called on the read's goroutine.
	CacheFailed func(error)
	// CacheDamaged, when set, is told of a cache file under Dir that is
	// there but cannot be used (unreadable, truncated, over the limit,
	// not hashing to its name): the error names the file and the ref.
	// The file is removed and the archive fetched again from its ref.
	// It is called on the read's goroutine.
	CacheDamaged func(error)

	// lim overrides the §4.1 limits in tests; zero means the SPEC's.
	lim limits

	mu       sync.Mutex
	got      map[string]*held       // archives read and still wanted, by hex digest
	inFlight map[refDigest]*reading // reads under way
	reads    map[string]int         // reads under way by hex digest: retain removes none of them
	// arrived, by hex digest, is closed when an archive of that digest is
	// got (by any ref's read): a caller waiting on another ref's read of
	// it takes it then (arrival).
	arrived map[string]chan struct{}
	// expanding holds a slot for each archive being expanded (expand.go).
	expanding chan struct{}
}

// held is an archive read, and the wants it was read or handed out for
// (retain keeps it while keep says yes to one of them).
type held struct {
	files map[string][]byte
	users map[nodes.ArchiveWant]struct{}
	// witness is a user keep said yes to at the last retain: while it
	// still does, and users has not grown to checkAt, retain asks keep
	// nothing else of this archive (it runs after every batch).
	witness nodes.ArchiveWant
	checkAt int
}

// use records w as a user of h.
func (h *held) use(w nodes.ArchiveWant) {
	if len(h.users) == 0 {
		h.witness = w
	}
	h.users[w] = struct{}{}
}

// wanted says whether keep says yes to a user of h; users keep refuses are
// forgotten whenever every user is asked (the witness refused, or users
// doubled since they last were: the set stays within twice the wanted).
func (h *held) wanted(keep func(nodes.ArchiveWant) bool) bool {
	if n := len(h.users); n > 0 && n < h.checkAt && keep(h.witness) { // the witness is one of users
		return true
	}
	found := false
	for w := range h.users {
		switch {
		case !keep(w):
			delete(h.users, w)
		case !found:
			h.witness, found = w, true
		}
	}
	h.checkAt = 2*len(h.users) + 2
	return found
}

// refDigest keys a read under way by ref and digest, not by digest alone:
// a ref that blocks or fails (a FIFO, a bus that does not answer) must not
// hold up another ref of the same digest (issue 19.8). What a read got is
// kept by digest, which is all that says what an archive is.
type refDigest struct{ ref, hexDigest string }

// reading is one read of an archive under way in this process.
type reading struct {
	done  chan struct{} // closed when files or err is set
	files map[string][]byte
	err   error
}

// Get returns the members of the templates archive ref whose SHA-256 is
// digest ("sha256:<64 lower-case hex>"), by name. A second Get for the same
// digest, in this process or after a restart (from the cache under Dir),
// fetches nothing. The map returned is shared between callers: do not
// modify it. Errors name ref and wrap ErrNotThereYet, ErrDigestMismatch,
// ErrNotTar, ErrUnsafeMember or ErrLimit where those apply.
//
// What Get returns is kept in memory, and on disk, until a Fetcher's
// Retain drops it (retain).
func (s *Store) Get(ctx context.Context, ref, digest string) (map[string][]byte, error) {
	return s.get(ctx, nodes.ArchiveWant{Ref: ref, Digest: digest})
}

// get is Get for w (its Ref and Digest), recording w as a user of the
// archive for Retain.
func (s *Store) get(ctx context.Context, w nodes.ArchiveWant) (map[string][]byte, error) {
	ref, digest := w.Ref, w.Digest
	hexDigest, err := parseDigest(digest)
	if err != nil {
		return nil, fmt.Errorf("templates archive %s: %w", ref, err)
	}
	for {
		r, mine, files, arrived := s.startRead(ctx, w, hexDigest)
		if files != nil {
			return files, nil
		}
		// The read goes on in its own goroutine, so that a caller whose ctx
		// ends is not kept by a read the system cannot interrupt.
		select {
		case <-arrived:
			// Another ref's read got the digest: take it (startRead does)
			// rather than wait out this ref's source (one that does not
			// answer would hold the module up for its whole try). The read
			// of this ref ends with ctx, which the caller's try cancels.
			continue
		case <-r.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("templates archive %s: %w", ref, s.cutShort(ctx, ref))
		}
		if r.err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("templates archive %s: %w", ref, s.cutShort(ctx, ref))
		}
		if r.err == nil && !mine {
			s.used(w, hexDigest, r.files) // the reader recorded its own want
		}
		if r.err == nil || mine {
			return r.files, r.err
		}
		// Another caller's read of this ref failed (its ctx may have ended
		// where ours has not): try it ourselves.
	}
}

// startRead returns the archive when it was read already (recording w as
// a user); else the read of w's ref under way, or one it starts (mine)
// with ctx, and the channel closed when the digest arrives by any ref
// (arrival).
func (s *Store) startRead(ctx context.Context, w nodes.ArchiveWant, hexDigest string) (r *reading, mine bool, files map[string][]byte, arrived <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.got[hexDigest]; h != nil {
		h.use(w)
		return nil, false, h.files, nil
	}
	if s.got == nil {
		s.got = make(map[string]*held)
		s.inFlight = make(map[refDigest]*reading)
		s.reads = make(map[string]int)
		s.arrived = make(map[string]chan struct{})
	}
	key := refDigest{w.Ref, hexDigest}
	if r := s.inFlight[key]; r != nil {
		return r, false, nil, s.arrival(hexDigest)
	}
	r = &reading{done: make(chan struct{})}
	s.inFlight[key] = r
	s.reads[hexDigest]++
	go func() {
		files, err := s.load(ctx, w.Ref, w.Digest, hexDigest)
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.inFlight, key)
		if s.reads[hexDigest]--; s.reads[hexDigest] == 0 {
			delete(s.reads, hexDigest)
			// Every caller waiting on arrival waits on a read of this
			// digest too, and each is done: none is left to tell.
			delete(s.arrived, hexDigest)
		}
		if err == nil {
			s.useLocked(w, hexDigest, files)
		}
		r.files, r.err = files, err
		close(r.done)
	}()
	return r, true, nil, s.arrival(hexDigest)
}

// arrival is the channel closed when the archive hexDigest is got; s.mu
// is held. Refs of one digest share its arrival: a ref whose source is
// silent (a bus that does not answer) or blocked need not wait out its
// own try once another ref has fetched the same bytes.
func (s *Store) arrival(hexDigest string) <-chan struct{} {
	ch := s.arrived[hexDigest]
	if ch == nil {
		ch = make(chan struct{})
		s.arrived[hexDigest] = ch
	}
	return ch
}

// used records w as a user of the archive hexDigest, whose members are
// files: kept again if retain dropped it meanwhile (files is what w's
// caller holds, and the next retain says whether it is still wanted).
func (s *Store) used(w nodes.ArchiveWant, hexDigest string, files map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.useLocked(w, hexDigest, files)
}

func (s *Store) useLocked(w nodes.ArchiveWant, hexDigest string, files map[string][]byte) {
	h := s.got[hexDigest]
	if h == nil {
		h = &held{files: files, users: map[nodes.ArchiveWant]struct{}{}, checkAt: 4}
		s.got[hexDigest] = h
		if ch := s.arrived[hexDigest]; ch != nil {
			close(ch)
			delete(s.arrived, hexDigest)
		}
	}
	h.use(w)
}

// retain drops every archive read whose users (the wants it was got for)
// keep all refuses and whose hex digest busy does not hold: from memory,
// and its file from the cache under Dir. An archive with a read under way
// (for any ref) is left for a later retain: no cache file is removed under
// a read or a write of it. With sweep, every other file of the cache that
// no archive held, busy or read names (left by an earlier run) goes too.
//
// While the user keep last said yes to an archive for still is wanted, keep
// is asked nothing else of it: a retain where nothing moved costs one keep
// per archive held. keep is called on the caller's goroutine, s.mu held.
func (s *Store) retain(keep func(nodes.ArchiveWant) bool, busy map[string]bool, sweep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for hexDigest, h := range s.got {
		if busy[hexDigest] || s.reads[hexDigest] > 0 || h.wanted(keep) {
			continue
		}
		delete(s.got, hexDigest)
		s.removeCache(hexDigest + ".tar")
	}
	if sweep {
		s.sweepCache(busy)
	}
}

// sweepCache removes each file of the cache that no archive held, busy or
// read at the moment names: archives of an earlier run no plan names now,
// and temporary files a write cut short left. Anything else is not the
// cache's and is left alone. s.mu is held.
func (s *Store) sweepCache(busy map[string]bool) {
	if s.Dir == "" {
		return
	}
	entries, err := os.ReadDir(filepath.Join(s.Dir, "templates"))
	if err != nil {
		return
	}
	for _, e := range entries {
		hexDigest, ok := cacheName(e.Name())
		if !ok || s.got[hexDigest] != nil || busy[hexDigest] || s.reads[hexDigest] > 0 {
			continue
		}
		s.removeCache(e.Name())
	}
}

// cacheName says which digest a file of the cache is of: <hex>.tar, or a
// temporary file a write of it left (renameio's .<hex>.tar<random>).
func cacheName(name string) (string, bool) {
	base, tmp := strings.CutPrefix(name, ".")
	if len(base) < 68 || base[64:68] != ".tar" || strings.Trim(base[:64], "0123456789abcdef") != "" {
		return "", false
	}
	switch rest := base[68:]; {
	case !tmp && rest == "":
	case tmp && rest != "" && strings.Trim(rest, "0123456789") == "":
	default:
		return "", false
	}
	return base[:64], true
}

// removeCache removes the cache's file name; one already gone is no
// matter, and one that cannot be removed is tried again by no one (a
// later run's sweep does).
func (s *Store) removeCache(name string) {
	if s.Dir == "" {
		return
	}
	_ = os.Remove(filepath.Join(s.Dir, "templates", name))
}

// load reads the archive from the cache, or fetches, checks and caches it,
// then reads its tar.
func (s *Store) load(ctx context.Context, ref, digest, hexDigest string) (map[string][]byte, error) {
	lim := s.limits()
	data, cached := s.readCache(ref, hexDigest, lim)
	if !cached {
		var err error
		data, err = s.fetch(ctx, ref, lim)
		if err != nil {
			return nil, fmt.Errorf("templates archive %s: %w", ref, err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != hexDigest {
			// Never the digest (or size) of what was read: a ref may name any
			// readable file, and its digest would be an oracle for its bytes.
			return nil, fmt.Errorf("templates archive %s: %w: it is not the plan's %s",
				ref, ErrDigestMismatch, digest)
		}
	}
	files, err := s.expand(ctx, bytes.NewReader(data), lim)
	if err != nil {
		if cached && !errors.Is(err, errNoSlot) {
			// Bytes of this digest never read otherwise: the cache keeps
			// only archives that can be used (retain drops what it holds).
			s.removeCache(hexDigest + ".tar")
		}
		return nil, fmt.Errorf("templates archive %s: %w", ref, err)
	}
	if !cached && !s.gotAlready(hexDigest) {
		// Cached once read: an archive that cannot be used is not kept,
		// as nothing would ever take it off the disk. One that cannot be
		// kept (the state dir unwritable, full) is used from memory. One
		// another ref's read got meanwhile is that read's to cache: its
		// callers took it already (arrival), and a second write of the
		// same bytes would be a temporary file left under a retain.
		if err := s.writeCache(hexDigest, data); err != nil && s.CacheFailed != nil {
			s.CacheFailed(fmt.Errorf("templates archive %s: %w", ref, err))
		}
	}
	return files, nil
}

func (s *Store) limits() limits {
	if s.lim == (limits{}) {
		return defaultLimits
	}
	return s.lim
}

// gotAlready says whether the archive hexDigest was got by a read.
func (s *Store) gotAlready(hexDigest string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[hexDigest] != nil
}

// holds says whether the archive of digest is read already or in the
// cache (a file of its name: whether it still hashes to it is the read's
// to say).
func (s *Store) holds(digest string) bool {
	hexDigest, err := parseDigest(digest)
	if err != nil {
		return false
	}
	s.mu.Lock()
	h := s.got[hexDigest]
	s.mu.Unlock()
	if h != nil {
		return true
	}
	if s.Dir == "" {
		return false
	}
	_, err = os.Stat(s.cachePath(hexDigest))
	return err == nil
}

func (s *Store) cachePath(hexDigest string) string {
	return filepath.Join(s.Dir, "templates", hexDigest+".tar")
}

// readCache returns the cached archive when it is there and still hashes to
// its digest; anything else means fetch again. A file that is there but
// cannot be used (unreadable, damaged) is said to CacheDamaged and removed
// (cachedamaged.go).
func (s *Store) readCache(ref, hexDigest string, lim limits) ([]byte, bool) {
	if s.Dir == "" {
		return nil, false
	}
	p := s.cachePath(hexDigest)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		s.damaged(ref, p, nil, err)
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, lim.bytes+1))
	switch {
	case err != nil:
		s.damaged(ref, p, f, err)
		return nil, false
	case int64(len(data)) > lim.bytes:
		s.damaged(ref, p, f, fmt.Errorf("it is over %s", mib(lim.bytes)))
		return nil, false
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != hexDigest {
		s.damaged(ref, p, f, fmt.Errorf("its %d bytes do not hash to the digest it is kept under (truncated or damaged)", len(data)))
		return nil, false
	}
	return data, true
}

func (s *Store) writeCache(hexDigest string, data []byte) error {
	if s.Dir == "" {
		return nil
	}
	p := s.cachePath(hexDigest)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("keeping it in the cache: %w", err)
	}
	if err := renameio.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("keeping it in the cache at %s: %w", p, err)
	}
	return nil
}

// parseDigest checks "sha256:<64 lower-case hex>" and returns the hex.
func parseDigest(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("digest %q is not sha256:<64 lower-case hex>", digest)
	}
	return h, nil
}

// fetch reads the archive's bytes from where ref says, at most lim.bytes.
func (s *Store) fetch(ctx context.Context, ref string, lim limits) ([]byte, error) {
	switch {
	case strings.HasPrefix(ref, "file://"):
		p, err := spec.FileRefPath(ref)
		if err != nil {
			return nil, err
		}
		return fetchFile(s.Root, p, lim)
	case strings.HasPrefix(ref, "obj://"):
		bucket, name, ok := strings.Cut(strings.TrimPrefix(ref, "obj://"), "/")
		if !ok || bucket == "" || name == "" {
			return nil, errors.New("ref is not obj://<bucket>/<name>")
		}
		return s.fetchObject(ctx, bucket, name, lim)
	default:
		return nil, errors.New("ref is neither obj://<bucket>/<name> nor file:///<absolute path>")
	}
}

func fetchFile(root, p string, lim limits) ([]byte, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("file ref path %q is not absolute", p)
	}
	f, err := openFile(root, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: file %s: %w", ErrNotThereYet, p, err)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("file %s is not a regular file", p)
	}
	if st.Size() > lim.bytes {
		return nil, fmt.Errorf("%w: archive is %d bytes, over %s", ErrLimit, st.Size(), mib(lim.bytes))
	}
	return readLimited(f, lim)
}

func (s *Store) fetchObject(ctx context.Context, bucket, name string, lim limits) ([]byte, error) {
	if s.JS == nil {
		return nil, errors.New("no JetStream connection to read the object store with")
	}
	obs, err := s.objectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: object store bucket %q: %w", ErrNotThereYet, bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("object store bucket %q: %w", bucket, err)
	}
	return s.readObject(ctx, obs, bucket, name, lim)
}

// readLimited reads r to its end, refusing more than lim.bytes.
func readLimited(r io.Reader, lim limits) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, lim.bytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > lim.bytes {
		return nil, fmt.Errorf("%w: archive is over %s", ErrLimit, mib(lim.bytes))
	}
	return data, nil
}

// openFile opens p for reading, below root when root is set. It opens
// without blocking: opening a FIFO for reading would otherwise wait for a
// writer, for ever (issue 19.8); fetchFile refuses it, as anything not a
// regular file, before a byte is read.
func openFile(root, p string) (*os.File, error) {
	const flags = os.O_RDONLY | syscall.O_NONBLOCK
	if root == "" {
		return os.OpenFile(p, flags, 0)
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil || !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("%w %s: file %s", ErrOutsideRoot, root, p)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("templates root: %w", err)
	}
	defer r.Close()
	return r.OpenFile(rel, flags, 0)
}

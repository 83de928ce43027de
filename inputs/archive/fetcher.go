package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/nodes"
)

// Fetched is one fetch's outcome as a Fetcher delivers it: the archive's
// members, or why not (Broken tells an archive that fails its module from
// one worth waiting on; both are fetched again).
type Fetched struct {
	Want    nodes.ArchiveWant
	Members map[string][]byte
	Err     error
	// Tried is when the try this is the outcome of began: what explain
	// says as the fetch's last try.
	Tried time.Time
}

// Broken says whether err means what is at the ref cannot be used (its
// digest is not the plan's, its bytes of the plan's digest do not read as
// a tar, a member is unsafe, a limit is broken, a file:// ref is outside
// the templates root): the module fails with that reason. Otherwise the
// archive is not there yet or the source did not answer, and the module
// waits. Either way a Fetcher fetches it again: what is at the ref may be
// replaced.
func Broken(err error) bool {
	return errors.Is(err, ErrDigestMismatch) || errors.Is(err, ErrNotTar) || errors.Is(err, ErrUnsafeMember) ||
		errors.Is(err, ErrLimit) || errors.Is(err, ErrOutsideRoot)
}

// DefaultTimeout is how long one try of a fetch may take (Fetcher.Timeout).
const DefaultTimeout = 30 * time.Second

// DefaultRecheck is how long at most a fetch waits before it tries again
// when an obj:// ref's object store bucket does not exist (Fetcher.Recheck):
// SPEC §2.2 has a bucket not there yet looked for again at least every 5 s.
const DefaultRecheck = 5 * time.Second

// Fetcher gets templates archives from a Store in the background, delivers
// each outcome on Fetched and, until an archive is got, fetches it again
// with backoff (doubling up to its cap) until Retain drops it. That holds
// for every failure, a Broken one too: the controller may publish a plan
// before it uploads the archive, or the ref may still hold an older one, so
// bytes that do not match the plan's digest today may match once replaced,
// and the module then proceeds with no new plan. A failure no new bytes at
// the ref could cure (not a tar, an unsafe member, a limit) costs no more
// than one try per backoff cap; keeping one rule keeps it simple. Each try
// ends after Timeout: a source that does not answer is reported (its error
// names the ref) and tried again, and holds up no other fetch. Safe for
// concurrent use.
type Fetcher struct {
	// Timeout bounds one try (DefaultTimeout if not positive); past it the
	// try fails with a reason saying so, worth waiting on. Set it before
	// the first Fetch.
	Timeout time.Duration
	// Recheck caps the wait before the next try of an obj:// ref whose
	// object store bucket does not exist (DefaultRecheck if not positive):
	// the bucket is looked for again at least that often, as every
	// bucket is (SPEC §2.2), however far the backoff has grown. A bucket
	// that exists without the object waits the backoff. Set it before
	// the first Fetch.
	Recheck time.Duration

	ctx     context.Context
	store   *Store
	backoff backoff.Doubling
	out     chan Fetched

	mu      sync.Mutex
	pending map[*fetch]bool // under way or to be fetched again
	swept   bool            // the first Retain swept the store's cache
}

// fetch is one archive wanted, from its first try until it is got or
// dropped.
type fetch struct {
	want    nodes.ArchiveWant
	attempt int
	timer   *time.Timer
}

// NewFetcher makes a Fetcher that reads s until ctx ends.
func NewFetcher(ctx context.Context, s *Store, b backoff.Doubling) *Fetcher {
	return &Fetcher{ctx: ctx, store: s, backoff: b, out: make(chan Fetched, 16), pending: map[*fetch]bool{}}
}

// Fetched is where every outcome goes; read it promptly.
func (f *Fetcher) Fetched() <-chan Fetched { return f.out }

// Fetch gets w's archive now, and again (with backoff) until it is got.
func (f *Fetcher) Fetch(w nodes.ArchiveWant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fe := &fetch{want: w}
	f.pending[fe] = true
	go f.run(fe)
}

// Retain stops fetching every archive keep refuses (the plan moved on, the
// module left); an outcome on its way is still delivered. It also drops
// from the store (its memory, and the archive's cache file) every archive
// got whose wants keep all refuses: a digest two plans name stays while
// either does, and one named again later is fetched again. An archive a
// fetch kept here is for, or one being read, is left alone.
//
// The first Retain also removes every cache file no archive got or fetch
// kept names (an earlier run's): call it only once every plan is read and
// its archive asked for (Fetch), or it would throw away what the plans
// are about to name. The daemon does: it retains only once its first load
// is done.
func (f *Fetcher) Retain(keep func(nodes.ArchiveWant) bool) {
	f.mu.Lock()
	var busy map[string]bool // hex digests of the fetches kept
	for fe := range f.pending {
		if !keep(fe.want) {
			if fe.timer != nil {
				fe.timer.Stop()
			}
			delete(f.pending, fe)
			continue
		}
		if busy == nil {
			busy = map[string]bool{}
		}
		busy[strings.TrimPrefix(fe.want.Digest, "sha256:")] = true
	}
	sweep := !f.swept
	f.swept = true
	f.mu.Unlock()
	// A fetch got meanwhile was recorded by the store as a user before it
	// left pending: retain sees it one way or the other.
	f.store.retain(keep, busy, sweep)
}

// run makes one try, delivers its outcome, and schedules the next try
// unless it got the archive.
func (f *Fetcher) run(fe *fetch) {
	tried := time.Now()
	members, err := f.try(fe.want)
	select {
	case f.out <- Fetched{Want: fe.want, Members: members, Err: err, Tried: tried}:
	case <-f.ctx.Done():
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !f.pending[fe]:
	case err == nil:
		delete(f.pending, fe)
	default:
		wait := f.backoff.Next(fe.attempt)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			recheck := f.Recheck
			if recheck <= 0 {
				recheck = DefaultRecheck
			}
			wait = min(wait, recheck)
		}
		fe.timer = time.AfterFunc(wait, func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.pending[fe] && f.ctx.Err() == nil {
				fe.attempt++
				go f.run(fe)
			}
		})
	}
}

// try fetches w once, within the Timeout.
func (f *Fetcher) try(w nodes.ArchiveWant) (map[string][]byte, error) {
	d := f.Timeout
	if d <= 0 {
		d = DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(f.ctx, d, fmt.Errorf("not fetched within %s: %w", d, context.DeadlineExceeded))
	defer cancel()
	return f.store.get(ctx, w)
}

// Fetching says a first try is under way or an outcome is not yet taken
// (a try again after a failure is not).
func (f *Fetcher) Fetching() bool {
	if len(f.out) > 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for fe := range f.pending {
		if fe.attempt == 0 && fe.timer == nil {
			return true
		}
	}
	return false
}

// FetchingLocal says a first try is under way, or its outcome not yet
// taken, for an archive this process or the state dir's cache holds: one
// answered from memory or the disk, which the daemon's first fill waits
// for, so that a restart does not report a module waiting for an archive
// it has (SPEC §3: kept by digest, a second plan naming it fetches
// nothing) and then applied again.
func (f *Fetcher) FetchingLocal() bool {
	if len(f.out) > 0 {
		return true
	}
	f.mu.Lock()
	var first []nodes.ArchiveWant
	for fe := range f.pending {
		if fe.attempt == 0 && fe.timer == nil {
			first = append(first, fe.want)
		}
	}
	f.mu.Unlock()
	for _, w := range first {
		if f.store.holds(w.Digest) {
			return true
		}
	}
	return false
}

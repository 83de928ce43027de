package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/backoff"
)

const (
	// DefaultRecheck is how often a missing bucket is looked for again
	// (SPEC §2.2: at least every 5 s).
	DefaultRecheck = 5 * time.Second
	// DefaultInitTimeout bounds the wait for the end of a watcher's initial
	// values; past it the watcher is restarted.
	DefaultInitTimeout = 30 * time.Second

	// DefaultGoneGrace is how long a bucket seen deleted is looked for
	// again before it is said Missing (Watch.GoneGrace).
	DefaultGoneGrace = time.Second
	// goneLookEvery is how often it is looked for in that time.
	goneLookEvery = 100 * time.Millisecond

	restartMin = time.Second      // first wait before restarting a failed watcher
	restartMax = 30 * time.Second // the wait doubles up to this
)

// Watch keeps one bucket's keys under one filter in sync for the daemon: it
// waits for the bucket, delivers one Snapshot, then every live change, and
// starts over (with a new Snapshot) whenever its watcher fails or Resync is
// called. It never creates the bucket.
type Watch struct {
	// Recheck is how often a missing bucket is looked for again
	// (DefaultRecheck if zero). Set it before Run.
	Recheck time.Duration
	// InitTimeout bounds the wait for a watcher's initial values
	// (DefaultInitTimeout if zero). Set it before Run.
	InitTimeout time.Duration
	// KeepWhileUnread: a bucket missing or refused says nothing of what it
	// held. Its Missing or NotPermitted names no key gone, and the keys
	// known are kept, so the Snapshot read once it can be read again names
	// those gone since (a bucket deleted by mistake, or a right taken by
	// mistake, takes nothing away meanwhile). Without it they are all said
	// gone at once. Set it before Run.
	KeepWhileUnread bool
	// Shrink, when set, is what a snapshot keeps of each value as the
	// watcher gathers it: Shrink(key, value) in its place. A snapshot is
	// handed over whole, so every value of the bucket, with the message
	// it came in, was held until the reader had taken the last; a reader
	// that keeps little of most values (the daemon, of another node's
	// plan) can have that little kept instead. Only the snapshot's values
	// are given to it (a live change is handed over at once), on the
	// library's delivery goroutine: it must not block, nor keep value,
	// and must return what the reader would read of value alike. Set it
	// before Run.
	Shrink func(key string, value []byte) []byte

	// GoneGrace is how long a bucket seen deleted while it was followed
	// is looked for again (every goneLookEvery) before it is said Missing
	// (DefaultGoneGrace if zero): one deleted and made again at once is
	// followed on, never said Missing between. Set it before Run.
	GoneGrace time.Duration

	js             jetstream.JetStream
	bucket, filter string
	out            chan<- Update
	log            zerolog.Logger
	resync         chan struct{}
	known          *keySet // the keys the updates sent so far say exist
}

// NewWatch prepares a watch of the keys of bucket matching filter (">" or ""
// for all keys; `*` matches one token, a final `>` the rest), delivering to
// out. Run starts it.
func NewWatch(js jetstream.JetStream, bucket, filter string, out chan<- Update, log zerolog.Logger) *Watch {
	if filter == "" {
		filter = jetstream.AllKeys
	}
	return &Watch{
		js:     js,
		bucket: bucket,
		filter: filter,
		out:    out,
		log:    log.With().Str("bucket", bucket).Str("filter", filter).Logger(),
		resync: make(chan struct{}, 1),
		known:  &keySet{},
	}
}

// Resync asks for a fresh snapshot: the running watcher is stopped, a new one
// started and its whole state delivered as a new Snapshot (or Missing). Call
// it when the connection comes back. It never blocks; several calls before
// the watch gets to them count as one.
func (w *Watch) Resync() {
	select {
	case w.resync <- struct{}{}:
	default:
	}
}

// stop says why following a watcher ended.
type stop int

const (
	stopCtx    stop = iota // ctx ended
	stopResync             // Resync was called
	stopFailed             // the watcher failed; restart with backoff
	stopGone               // the bucket was deleted (and maybe made again): look it up at once
	stopLost               // the watcher's consumer was lost (lost.go): make it again at once
)

// Run delivers the bucket's state to out until ctx ends. Sends on out block
// (respecting ctx): the daemon is expected to read promptly.
func (w *Watch) Run(ctx context.Context) {
	recheck := w.Recheck
	if recheck <= 0 {
		recheck = DefaultRecheck
	}
	initTimeout := w.InitTimeout
	if initTimeout <= 0 {
		initTimeout = DefaultInitTimeout
	}
	// A Resync asked before Run started is answered by the first snapshot.
	select {
	case <-w.resync:
	default:
	}

	bo := backoff.Counter{Doubling: backoff.Doubling{Min: restartMin, Max: restartMax}}
	look := backoff.Counter{Doubling: lookupBackoff(recheck)}
	missingSaid, refusedSaid := false, false
	// regrace is what is left of the GoneGrace of a bucket just seen
	// deleted: while it lasts, the bucket not found is looked for again
	// rather than said Missing (a bucket deleted and made again at once).
	var regrace time.Duration
	var failing lookupFailures
	for ctx.Err() == nil {
		kv, err := LookupKVSoon(ctx, w.js, w.bucket) // a refused lookup ends at once (refusals.go)
		switch {
		case err == nil:
			look.Reset()
			failing.over(w.log)
			regrace = 0
		case ctx.Err() != nil:
			return
		case isMissing(err) && regrace > 0:
			d := min(regrace, goneLookEvery)
			regrace -= d
			switch w.pause(ctx, d) {
			case stopCtx:
				return
			case stopResync:
				regrace = 0 // answer the Resync with what the bucket is now
			}
			continue
		case isMissing(err):
			if !missingSaid {
				w.log.Info().Dur("recheck", recheck).Msg("bucket not there yet; waiting for it")
				if !w.send(ctx, Update{Missing: true, Gone: w.forget()}) {
					return
				}
				missingSaid = true
			}
			switch w.pause(ctx, recheck) {
			case stopCtx:
				return
			case stopResync:
				missingSaid = false // answer the Resync with a Missing again
			}
			continue
		case notPermitted(w.js, w.bucket, err):
			if !w.sayNotPermitted(ctx, err, &refusedSaid) {
				return
			}
			continue
		default:
			// Perhaps a bucket not there yet, on a bus that cannot say so
			// for the moment: looked for again as one (lookupBackoff).
			d := look.Next()
			failing.say(w.log, err, d, time.Now())
			if w.pauseBackoff(ctx, d, &look) {
				return
			}
			continue
		}

		missingSaid = false
		why, live, err := w.follow(ctx, kv, initTimeout, recheck)
		if why == stopFailed && notPermitted(w.js, w.bucket, err) {
			if !w.sayNotPermitted(ctx, err, &refusedSaid) {
				return
			}
			continue
		}
		refusedSaid = refusedSaid && live == 0 && why != stopResync // said again once it was read
		switch why {
		case stopCtx:
			return
		case stopResync:
			w.log.Debug().Msg("resync: restarting watcher")
			bo.Reset()
			continue
		case stopGone, stopLost:
			bo.Reset()
			if why == stopGone {
				regrace = w.goneGrace()
			}
			continue
		}
		if live >= restartMax {
			bo.Reset() // it had been working for a while: not a tight loop
		}
		d := bo.Next()
		w.log.Warn().Err(err).Dur("retry_in", d).Msg("restarting watcher")
		if w.pauseBackoff(ctx, d, &bo) {
			return
		}
	}
}

func (w *Watch) goneGrace() time.Duration {
	if w.GoneGrace <= 0 {
		return DefaultGoneGrace
	}
	return w.GoneGrace
}

// lookupFailures says a bucket's lookups failing (otherwise than not
// found): the first failure, then only a failure saying something else or
// one lookupSayEvery after the last said, with how many failed between;
// a lookup that works again after them is said once. Tried again every
// few seconds while the bus is away, each failure said was a warning
// every 5 s for every bucket.
type lookupFailures struct {
	n      int       // failures in a row
	unsaid int       // of them, not said
	last   string    // the last error said
	at     time.Time // when it was said
}

// lookupSayEvery is how often the same lookup failure is said again.
const lookupSayEvery = 5 * time.Minute

func (f *lookupFailures) say(log zerolog.Logger, err error, retryIn time.Duration, now time.Time) {
	f.n++
	if msg := err.Error(); f.n > 1 && msg == f.last && now.Sub(f.at) < lookupSayEvery {
		f.unsaid++
		log.Debug().Err(err).Dur("retry_in", retryIn).Msg("cannot look up bucket")
		return
	}
	log.Warn().Err(err).Dur("retry_in", retryIn).Int("failed_since_said", f.unsaid).Msg("cannot look up bucket")
	f.last, f.at, f.unsaid = err.Error(), now, 0
}

// over says the lookups work again, when they had failed.
func (f *lookupFailures) over(log zerolog.Logger) {
	if f.n > 0 {
		log.Info().Int("failed", f.n).Msg("bucket looked up again")
	}
	*f = lookupFailures{}
}

// lookupBackoff is the wait after a lookup of the bucket that failed
// otherwise than "not found" (a timeout, a bus without JetStream for the
// moment): the watcher restarts' backoff from its start, doubling up to
// recheck, so that a bucket not there yet is looked for at least every
// recheck (SPEC §2.2), however long the lookups failed.
func lookupBackoff(recheck time.Duration) backoff.Doubling {
	return backoff.Doubling{Min: min(restartMin, recheck), Max: recheck}
}

// follow runs one watcher: its callback delivers the snapshot at the end of
// its initial values, then each live change (feed.go); follow waits for
// that, then looks every replacedChecks rechecks whether the bucket was
// replaced (replaced.go) and whether the watcher lost its consumer
// (lost.go), until ctx ends, Resync is called or the watcher fails. live
// is how long it ran after its snapshot.
func (w *Watch) follow(ctx context.Context, kv jetstream.KeyValue, initTimeout, recheck time.Duration) (why stop, live time.Duration, err error) {
	info, err := streamInfo(ctx, kv)
	switch {
	case ctx.Err() != nil:
		return stopCtx, 0, nil
	case isMissing(err):
		return stopGone, 0, nil
	case err != nil:
		return stopFailed, 0, fmt.Errorf("bus: looking at bucket %s: %w", w.bucket, err)
	}
	// Not through a member of the stream still catching up (replicas.go):
	// waited for as long as for the initial values, then read all the
	// same, said (a member that never catches up would hold it for good).
	// One that crashed, where this connection was, is not waited for
	// (crashed.go).
	if err := awaitReplicas(ctx, w.js.Conn(), kv, info, initTimeout); err != nil {
		var lag *LaggingError
		switch {
		case ctx.Err() != nil:
			return stopCtx, 0, nil
		case errors.As(err, &lag):
			w.log.Warn().Err(err).Msg("reading the bucket all the same: what it says may be behind until that replica catches up")
		default:
			return stopFailed, 0, fmt.Errorf("bus: looking at bucket %s: %w", w.bucket, err)
		}
	}
	born := bornOf(info)
	// The watcher's context lives as long as the watcher (or until the bus
	// refuses it: watchheard.go); the timeout is on waiting for the
	// initial values only.
	wctx, cancel := context.WithCancelCause(ctx)
	f := &feed{w: w, ctx: wctx, cancel: cancel, loaded: make(chan struct{}), closed: make(chan struct{})}
	sub, err := f.subscribe(info)
	if err != nil {
		if r := f.refusal(); r != nil {
			err = r // heard at once, not the timeout nats.go would have waited out
		}
		cancel(nil)
		if ctx.Err() != nil {
			return stopCtx, 0, nil
		}
		return stopFailed, 0, fmt.Errorf("bus: watching %s in bucket %s: %w", w.filter, w.bucket, err)
	}
	defer f.stop(sub)

	timer := time.NewTimer(initTimeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return stopCtx, 0, nil
	case <-w.resync:
		return stopResync, 0, nil
	case <-timer.C:
		return stopFailed, 0, fmt.Errorf("bus: no end of initial values of %s in bucket %s within %s (%d values so far)",
			w.filter, w.bucket, initTimeout, f.received.Load())
	case <-wctx.Done(): // refused (or ctx ended)
		return w.ended(ctx, f, 0, "during its initial values")
	case <-f.closed:
		return w.ended(ctx, f, 0, "during its initial values")
	case <-f.loaded:
	}

	since := time.Now()
	every := replacedChecks * recheck
	check := time.NewTimer(untilReplacedCheck(since, every))
	defer check.Stop()
	var suspect uint64 // a message the last look found undelivered (lost.go)
	for {
		select {
		case <-ctx.Done():
			return stopCtx, time.Since(since), nil
		case <-w.resync:
			return stopResync, time.Since(since), nil
		case <-check.C:
			if suspect != 0 { // a Recheck after the look that found it
				if f.lost(sub, suspect) {
					w.log.Warn().Uint64("undelivered_seq", suspect).Uint64("delivered_seq", f.last.Load()).
						Msg("the watcher's consumer was lost (a value under its filter was never delivered); making it again")
					return stopLost, time.Since(since), nil
				}
				suspect = 0
				check.Reset(untilReplacedCheck(time.Now(), every))
				continue
			}
			info, gone := w.replaced(ctx, kv, born)
			if gone {
				return stopGone, time.Since(since), nil
			}
			if held, yes := f.purged(info); yes {
				w.log.Warn().Uint64("messages", info.State.Msgs).Int("keys_held", held).
					Msg("the bucket holds fewer values than this watch knows of (purged): reading it again")
				return stopGone, time.Since(since), nil
			}
			if suspect = f.behind(ctx, info); suspect != 0 {
				check.Reset(recheck)
				continue
			}
			check.Reset(untilReplacedCheck(time.Now(), every))
		case <-wctx.Done(): // refused (or ctx ended)
			return w.ended(ctx, f, time.Since(since), "")
		case <-f.closed:
			return w.ended(ctx, f, time.Since(since), "")
		}
	}
}

// ended says why the watcher f ended on its own (its subscription
// closed, or its context ended): ctx ended, the bus refused it, or it
// closed (when: "" or "during its initial values").
func (w *Watch) ended(ctx context.Context, f *feed, live time.Duration, when string) (stop, time.Duration, error) {
	switch r := f.refusal(); {
	case ctx.Err() != nil:
		return stopCtx, live, nil
	case r != nil:
		return stopFailed, live, fmt.Errorf("bus: watching %s in bucket %s: %w", w.filter, w.bucket, r)
	}
	if when != "" {
		when = " " + when
	}
	return stopFailed, live, fmt.Errorf("bus: watcher of %s in bucket %s closed%s", w.filter, w.bucket, when)
}

// forget makes no key known (the bucket is missing or refused), and returns
// those known before (sorted); with KeepWhileUnread it keeps them and
// returns none.
func (w *Watch) forget() []string {
	if w.KeepWhileUnread {
		return nil // the next snapshot says what went (KeepWhileUnread)
	}
	gone := w.known.gone(nil)
	w.known = &keySet{}
	return gone
}

// send delivers u on out unless ctx ends first.
func (w *Watch) send(ctx context.Context, u Update) bool {
	u.Bucket, u.Filter = w.bucket, w.filter
	select {
	case w.out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}

// pause waits d, or less if ctx ends or Resync is called.
func (w *Watch) pause(ctx context.Context, d time.Duration) stop {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return stopCtx
	case <-w.resync:
		return stopResync
	case <-t.C:
		return stopFailed
	}
}

// pauseBackoff waits d before a retry; a Resync cuts it short and resets the
// backoff. It reports whether ctx ended.
func (w *Watch) pauseBackoff(ctx context.Context, d time.Duration, bo *backoff.Counter) bool {
	switch w.pause(ctx, d) {
	case stopCtx:
		return true
	case stopResync:
		bo.Reset()
	}
	return false
}

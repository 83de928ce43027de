package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A watcher is an ordered push consumer on the bucket's stream, made the way
// nats.go's own kv.Watch makes it (the same options, so the library still
// recreates it on a gap or missed heartbeats), but without kv.Watch's
// channel: the subscription's callback, on the library's delivery
// goroutine, builds the snapshot and hands it, then each live change, to
// out itself. kv.Watch's channel needed a goroutine of ours to read it and
// hand each change on, a hop that woke one more goroutine per change, and
// such wake-ups were ~40 % of a one-value change's CPU (issue 20). The
// goroutine that runs the watcher (follow) only waits: for the snapshot, a
// Resync, the replaced-bucket check, the init timeout, or the end of the
// subscription.

// The headers by which the bus marks a delete or purge (nats.go's kv.go).
const (
	kvOperation = "KV-Operation"
	kvDelete    = "DEL"
	kvPurge     = "PURGE"
)

// feed is one watcher's subscription and what its callback keeps.
type feed struct {
	w      *Watch
	ctx    context.Context // ends when the watcher stops: a send gives up
	pre    string          // what the keys' subjects start with: "$KV.<bucket>."
	stream string          // the stream the consumer is on
	// cancel ends ctx: with a *RefusedError when the bus refuses the
	// watcher (watchheard.go), nil when it stops.
	cancel context.CancelCauseFunc
	// unhear stops hearing refusals of the delivery subscription.
	unhear func()

	loaded    chan struct{} // closed once the snapshot was delivered
	closed    chan struct{} // closed when the subscription ends
	closeOnce sync.Once

	// mu serialises the callback with the start and the stop of the
	// watcher; held across a send so that once stopped is set no update
	// of this watcher reaches out (one after a Resync's new snapshot would
	// be stale), nor touches w.known. w.known changes only with an update
	// delivered: it is what the reader was told, which the next snapshot's
	// Gone is reckoned from. A send that fails (the watcher is stopping)
	// stops the watcher there, so nothing after it is delivered either.
	mu      sync.Mutex
	stopped bool
	sub     *nats.Subscription // the subscription whose messages are taken
	loading bool               // the initial values are still coming
	state   map[string]Entry   // what they say so far
	pending uint64             // how many the consumer held when made
	// received counts the initial values; atomic so that follow can say
	// how far they got without waiting for a callback blocked on a send.
	received atomic.Uint64
	// last is the stream sequence of the last message the callback was
	// given, set before it is handed on (lost.go).
	last atomic.Uint64
	// seen is a stream last sequence up to which the watcher missed
	// nothing, as a look found it; st is the stream, for asking its newest
	// message under the filter, got at the first such ask (lost.go; both
	// follow's alone).
	seen uint64
	st   jetstream.Stream
}

// Heartbeat is how often the bus tells an idle watcher's consumer it is
// still there. nats.go recreates an ordered consumer that missed two, its
// own check of each a timer apart from the other watches'. A consumer the
// server lost while the connection stayed up is the watch's own look's to
// notice (lost.go: within one look and a Recheck, 35 s by default), so the
// heartbeats are only the library's safety net, and rare: each one, and
// each of nats.go's checks, woke the client on its own, and at 10 s they
// were two thirds of an idle 100k-file node's CPU (issue 20: 1.93 → 0.67
// ms/s measured side by side at 5 min; at nats.go's default of 5 s, more).
const Heartbeat = 5 * time.Minute

// subscribe makes the watcher's consumer on the bucket's stream (described
// by info, nil if unknown) and, when the stream holds nothing under the
// filter, delivers the (empty) snapshot at once.
func (f *feed) subscribe(info *jetstream.StreamInfo) (*nats.Subscription, error) {
	w := f.w
	stream, bucket := "KV_"+w.bucket, w.bucket
	if info != nil {
		stream = info.Config.Name
		if m := info.Config.Mirror; m != nil { // a mirror keeps its origin's subjects
			bucket = strings.TrimPrefix(m.Name, "KV_")
		}
	}
	f.pre, f.stream = "$KV."+bucket+".", stream
	pjs, err := pushJS(w.js)
	if err != nil {
		return nil, err
	}
	// Under the lock, as kv.Watch does: the callback, called as soon as
	// the consumer exists, waits until the initial count is known.
	f.mu.Lock()
	defer f.mu.Unlock()
	heard := hearingOf(w.js.Conn())
	var sub *nats.Subscription
	var unfc func()
	start := time.Now()
	for try := tryFirst; ; try = nextTry(try) {
		f.loading, f.state = true, map[string]Entry{}
		forget := heard.await(f.createsConsumer, func(subject string) { f.refusedAs(subject, false) })
		unfc = f.hearFlowControl(heard, stream)
		sub, err = f.makeConsumer(pjs, stream, try)
		forget()
		if err == nil {
			f.sub = sub
			break
		}
		unfc()
		if !errors.Is(err, errCreateLate) || f.ctx.Err() != nil || time.Since(start) >= triesFor {
			return nil, err
		}
		w.log.Debug().Dur("waited", try).Msg("the bus did not answer the making of the watcher's consumer: making it again")
	}
	sub.SetClosedHandler(func(string) { f.closeOnce.Do(func() { close(f.closed) }) })
	f.hearDelivery(heard, sub, unfc)
	if f.ctx.Err() != nil {
		return sub, nil // refused: no (empty) snapshot of it
	}
	if n, err := sub.InitialConsumerPending(); err == nil {
		f.pending = n
		if n == 0 {
			f.loadedLocked()
		}
	}
	return sub, nil
}

// A watcher's consumer is made again when the bus has not answered its
// making within a try (tries.go): for about 3 s after a member crashed the
// cluster may place the consumer on it, and it never answers, nor does a
// cluster electing its meta leader. Waited out whole (nats.go's 5 s, then
// the watch's backoff), a change after a crash of the client's server was
// read 6 s late. Past triesFor the watcher fails (errCreateLate), as the
// 5 s wait did, and the watch's backoff follows.

// errCreateLate: the bus did not answer the making of a consumer in time.
var errCreateLate = errors.New("the bus did not answer the making of the watcher's consumer in time")

// makeConsumer subscribes to the watcher's ordered consumer, or says
// errCreateLate when the bus did not answer within within (a
// subscription made too late is undone: its callback, blocked on f.mu
// meanwhile, finds it is not f.sub and drops what it was given). The
// consumer's context ends with f.ctx.
func (f *feed) makeConsumer(pjs nats.JetStreamContext, stream string, within time.Duration) (*nats.Subscription, error) {
	ctx, cancel := context.WithCancel(f.ctx)
	late := time.AfterFunc(within, cancel)
	sub, err := pjs.Subscribe(f.pre+f.w.filter, f.deliver, nats.BindStream(stream),
		nats.OrderedConsumer(), nats.IdleHeartbeat(Heartbeat), nats.DeliverLastPerSubject(), nats.Context(ctx))
	if late.Stop() || f.ctx.Err() != nil {
		return sub, err
	}
	if err == nil {
		_ = sub.Unsubscribe()
	}
	return nil, errCreateLate
}

// deliver is the subscription's callback: one message of the consumer, in
// the stream's order, none twice (the library's ordered consumer recreates
// itself past the last one delivered when it sees a gap).
func (f *feed) deliver(m *nats.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	f.last.Store(md.Sequence.Stream)
	if len(m.Subject) <= len(f.pre) {
		return
	}
	e := entryOf(m, f.pre, md.Sequence.Stream)
	del := isDelete(m.Header)
	if del {
		e.Value = nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.stopped || f.ctx.Err() != nil: // stopping: nothing more of it
	case m.Sub != f.sub: // a consumer made too late, and undone (makeConsumer)
	case f.loading:
		if del { // a delete or purge is not state
			delete(f.state, e.Key)
		} else {
			if f.w.Shrink != nil {
				e.Value = f.w.Shrink(e.Key, e.Value)
			}
			f.state[e.Key] = e
		}
		// As kv.Watch: the initial values end with the count the consumer
		// held when made, or with the first message that has none after it.
		if f.received.Add(1) >= f.pending || md.NumPending == 0 {
			f.loadedLocked()
		}
	default:
		if !f.w.send(f.ctx, Update{Entries: []Entry{e}, Deleted: del}) {
			f.stopped = true // the reader never got it: nor anything after it
			return
		}
		if del {
			f.w.known.delete(e.Key)
		} else {
			f.w.known.add(e.Key)
		}
	}
}

// loadedLocked delivers the snapshot of the initial values. f.mu is held.
func (f *feed) loadedLocked() {
	state := f.state
	f.loading, f.state = false, nil
	entries := sortedEntries(state)
	// Made before the send: once sent, entries are the reader's.
	known := newKeySet(len(entries), func(i int) string { return entries[i].Key })
	if !f.w.send(f.ctx, Update{Snapshot: true, Entries: entries, Gone: f.w.known.gone(state)}) {
		f.stopped = true
		return
	}
	f.w.known = known
	f.w.log.Debug().Int("keys", len(state)).Msg("snapshot delivered")
	close(f.loaded)
}

// stop ends the watcher: once it returns no update of it reaches out. It
// ends f.ctx, which a callback blocked on a send is waiting on. The
// consumer is deleted in the background: that is a request, which waits
// while the bus is away.
func (f *feed) stop(sub *nats.Subscription) {
	f.unhear()
	f.cancel(nil)
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	go func() {
		if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrBadSubscription) &&
			!errors.Is(err, nats.ErrConnectionClosed) {
			f.w.log.Debug().Err(err).Msg("stopping watcher")
		}
	}()
}

// isDelete says whether a message's headers mark a delete or a purge.
func isDelete(h nats.Header) bool {
	if len(h) == 0 {
		return false
	}
	if op := h.Get(kvOperation); op != "" {
		return op == kvDelete || op == kvPurge
	}
	switch h.Get(jetstream.MarkerReasonHeader) { // the server's own markers
	case "MaxAge", "Purge", "Remove":
		return true
	}
	return false
}

// pushJS is the (legacy) JetStream context nats.go's kv.Watch subscribes
// with, on js's API prefix or domain.
func pushJS(js jetstream.JetStream) (nats.JetStreamContext, error) {
	o := js.Options()
	var opts []nats.JSOpt
	switch {
	case o.Domain != "":
		opts = append(opts, nats.Domain(o.Domain))
	case o.APIPrefix != "":
		opts = append(opts, nats.APIPrefix(o.APIPrefix))
	}
	pjs, err := js.Conn().JetStream(opts...)
	if err != nil {
		return nil, fmt.Errorf("bus: JetStream context: %w", err)
	}
	return pjs, nil
}

package bus

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A lookup the bus refuses (a permission violation on the
// $JS.API.STREAM.INFO.KV_<bucket> request) gets no reply: the server says
// the violation to the connection alone (its error handler, LastError),
// and nats.go waits out its whole request timeout (5 s). LookupKV hears
// the violation on the connection's error handler and ends the lookup at
// once with a RefusedError. The handler is wrapped when Connect makes the
// connection, or on a connection's first lookup (the handler it had is
// still called first), so any connection is heard, Connect's or not; a
// handler set on the connection after that replaces the hearing, and a
// refused lookup then ends as it did before, at its timeout, said a
// timeout. A refusal is heard by the calls in flight on its subject as it
// comes, or kept for one later timeout (hearing, below): an old violation
// on the same subject does not make every later timeout a refusal.

// RefusedError is a bucket's (or object store's) lookup, or a read of its
// keys, the bus refused this connection: a permission violation on
// Subject, the call's request. It is a nats.ErrPermissionViolation
// (errors.Is).
type RefusedError struct {
	Bucket  string
	Stream  string // KV_<bucket> or OBJ_<store>
	Subject string
	Op      string // what was refused: "lookup" (""), "read"
	// Subscription: Subject is a subscription the bus refused (a
	// watcher's delivery subject), not a publish.
	Subscription bool
}

func (e *RefusedError) Error() string {
	op := e.Op
	if op == "" {
		op = "lookup"
	}
	verb := "publish"
	if e.Subscription {
		verb = "subscription"
	}
	return "the bus refused the " + op + " of bucket " + e.Bucket + " (permissions violation for " + verb + " to \"" + e.Subject + "\")"
}

func (e *RefusedError) Unwrap() error { return nats.ErrPermissionViolation }

// lookupSubject is the last tokens of the subject a lookup of stream
// publishes to: $JS.API.STREAM.INFO.<stream>, or under a JetStream
// domain's prefix ($JS.<domain>.API.…).
func lookupSubject(stream string) string { return ".STREAM.INFO." + stream }

// LookupKV looks bucket up as js.KeyValue does, but a lookup the bus
// refuses ends as soon as the connection hears the violation, with a
// *RefusedError, rather than when the request times out. A missing bucket
// is jetstream.ErrBucketNotFound, as ever.
func LookupKV(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	return lookup(ctx, js, bucket, "KV_"+bucket, js.KeyValue)
}

// LookupKVSoon is LookupKV asked again when the bus has not answered
// within a try (tries.go: 0.25, 0.5, then 1 s each, for at most 8 s; the
// last try's timeout is the error): a lookup is answered by the stream's
// leader, and one asked while a crashed member's streams elected theirs
// waited out nats.go's 5 s and the watch's backoff even when a leader came
// a moment after it was sent (a change after the client's server crashed
// was read 13 s later). A refused or missing bucket is said at once.
func LookupKVSoon(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	start := time.Now()
	for try := tryFirst; ; try = nextTry(try) {
		tctx, cancel := context.WithTimeout(ctx, try)
		kv, err := LookupKV(tctx, js, bucket)
		cancel()
		late := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
		if !late || ctx.Err() != nil || time.Since(start) >= triesFor {
			return kv, err
		}
	}
}

// LookupObjectStore is LookupKV for an object store (js.ObjectStore): a
// refused lookup ends at once with a *RefusedError. A missing store is
// jetstream.ErrBucketNotFound (or ErrStreamNotFound), as ever.
func LookupObjectStore(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.ObjectStore, error) {
	return lookup(ctx, js, bucket, "OBJ_"+bucket, js.ObjectStore)
}

// lookup calls look for bucket (its stream stream), ending it with a
// *RefusedError as soon as the connection is refused the stream's info.
func lookup[T any](ctx context.Context, js jetstream.JetStream, bucket, stream string, look func(context.Context, string) (T, error)) (T, error) {
	var v T
	suffix := lookupSubject(stream)
	err := hear(ctx, js, &RefusedError{Bucket: bucket, Stream: stream},
		func(subject string) bool { return strings.HasSuffix(subject, suffix) },
		func(ctx context.Context) (err error) {
			v, err = look(ctx, bucket)
			return err
		})
	if err != nil {
		var zero T
		var refused *RefusedError
		if errors.As(err, &refused) {
			return zero, refused
		}
		return v, err
	}
	return v, nil
}

// HearKV runs call, a read of bucket's keys (a watch, a get) on js's
// connection, with a context that ends as soon as the connection is
// refused a publish to a subject of the bucket's stream (KV_<bucket>: the
// consumer a watch makes, a direct get): call's error is then a
// *RefusedError (Op "read") naming the refused subject, rather than the
// timeout nats.go would wait out for a reply the bus never sends.
func HearKV(ctx context.Context, js jetstream.JetStream, bucket string, call func(context.Context) error) error {
	stream := "KV_" + bucket
	return hear(ctx, js, &RefusedError{Bucket: bucket, Stream: stream, Op: "read"},
		func(subject string) bool { return namesStream(subject, stream) }, call)
}

// HearObjectStore is HearKV for object store store (its stream
// OBJ_<store>: a direct get of an object's description, the consumer
// that reads its chunks, their flow control): a read the bus refuses ends
// at once with a *RefusedError (Op "read") naming the refused subject.
// call's context ends when call returns: the object is read within it.
func HearObjectStore(ctx context.Context, js jetstream.JetStream, store string, call func(context.Context) error) error {
	stream := "OBJ_" + store
	return hear(ctx, js, &RefusedError{Bucket: store, Stream: stream, Op: "read"},
		func(subject string) bool { return namesStream(subject, stream) }, call)
}

// namesStream says whether subject, a JetStream API or flow-control
// subject, names stream as a token ($JS.API.CONSUMER.CREATE.<stream>.…,
// $JS.API.DIRECT.GET.<stream>.…, $JS.API.STREAM.MSG.GET.<stream>).
func namesStream(subject, stream string) bool {
	return strings.HasSuffix(subject, "."+stream) || strings.Contains(subject, "."+stream+".")
}

// hear runs call with a context that ends, as soon as the connection is
// refused a publish whose subject matches, with a copy of refused (its
// Subject the refused one) as the cause; call's error is then that copy.
func hear(ctx context.Context, js jetstream.JetStream, refused *RefusedError, match func(subject string) bool, call func(context.Context) error) error {
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	forget := hearingOf(js.Conn()).await(match, func(subject string) {
		r := *refused
		r.Subject = subject
		cancel(&r)
	})
	defer forget()
	err := call(hctx)
	if err != nil {
		var heard *RefusedError
		if errors.As(context.Cause(hctx), &heard) {
			return heard
		}
	}
	return err
}

// hearing hands the publishes a connection is refused to the calls
// awaiting them, each refusal to every call in flight whose request it
// names: the bus refuses this connection that subject now, so each of
// them is refused too. (Each took one refusal, the oldest call first,
// until a call ended by another's refusal before its own request went
// out left the last one with none: it waited out its timeout.) A refusal
// no call awaited is
// kept for a while (heardMemory, at most maxHeard of them) for Refused to
// take, once (askedAgain aside), after a call not heard so timed out.
// The subscriptions a connection is refused (a watcher's delivery
// subject) are handed and kept the same way, apart from the publishes:
// only awaitSubscription takes one.
type hearing struct {
	mu      sync.Mutex
	waiters []*waiter     // in the order they came
	kept    []keptRefusal // refusals no waiter took, oldest first
}

// waiter is one call awaiting a refusal of a subject it matches: of a
// publish, or (sub) of a subscription.
type waiter struct {
	sub     bool
	match   func(subject string) bool
	refused func(subject string)
}

// keptRefusal is a refusal no waiter took (of a publish, or sub of a
// subscription), when it was heard, and when it was taken (zero: not yet).
type keptRefusal struct {
	subject   string
	sub       bool
	at, taken time.Time
}

// maxHeard bounds the refusals a hearing keeps; heardMemory is how long
// one is kept: longer than the calls Refused is asked of last (a
// templates fetch's 30 s try), shorter than an operator takes to give a
// right back and a stream to time out on its own.
const maxHeard = 64

var heardMemory = time.Minute

// consumerDelete is in the subject of a consumer delete
// ($JS.API.CONSUMER.DELETE.<stream>.<consumer>).
const consumerDelete = ".CONSUMER.DELETE."

// askedAgain is how long a refusal Refused took still answers it (a
// variable for a test).
var askedAgain = time.Second

// hearings: each connection's hearing.
var hearings perConn[hearing]

// hearingOf is nc's hearing, made (and nc's error handler wrapped) on
// first use.
func hearingOf(nc *nats.Conn) *hearing {
	return hearings.of(nc, func() *hearing {
		h := &hearing{}
		prev := nc.ErrorHandler()
		nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
			if prev != nil {
				prev(c, sub, err)
			}
			h.heard(err)
		})
		return h
	})
}

// heardOn is nc's hearing if it has one (nil: its refusals are not heard).
func heardOn(nc *nats.Conn) *hearing { return hearings.on(nc) }

// await calls refused with the subject of the first publish refused from
// now on that match says is its (and no waiter before it took), unless
// the returned forget is called first.
func (h *hearing) await(match func(subject string) bool, refused func(subject string)) (forget func()) {
	w := &waiter{match: match, refused: refused}
	h.mu.Lock()
	h.waiters = append(h.waiters, w)
	h.mu.Unlock()
	return h.forget(w)
}

// awaitSubscription calls refused if the bus refused, or refuses from now
// on, the subscription to subject (a refusal of it kept, heard before the
// call, is taken: a subscription is refused as it is made, before its
// subject may be known to the caller), unless forget is called first.
func (h *hearing) awaitSubscription(subject string, refused func(subject string)) (forget func()) {
	match := func(s string) bool { return s == subject }
	h.mu.Lock()
	since := time.Now().Add(-heardMemory)
	for i := len(h.kept) - 1; i >= 0 && h.kept[i].at.After(since); i-- {
		if k := &h.kept[i]; k.sub && k.taken.IsZero() && match(k.subject) {
			k.taken = time.Now()
			h.mu.Unlock()
			refused(subject)
			return func() {}
		}
	}
	w := &waiter{sub: true, match: match, refused: refused}
	h.waiters = append(h.waiters, w)
	h.mu.Unlock()
	return h.forget(w)
}

// forget is what takes w off the waiters.
func (h *hearing) forget(w *waiter) func() {
	return func() {
		h.mu.Lock()
		if i := slices.Index(h.waiters, w); i >= 0 {
			h.waiters = slices.Delete(h.waiters, i, i+1)
		}
		h.mu.Unlock()
	}
}

// heard is an error the connection reported on its own.
func (h *hearing) heard(err error) {
	subject, ok := RefusedPublish(err)
	sub := false
	if !ok {
		if subject, ok = RefusedSubscription(err); !ok {
			return
		}
		sub = true
	}
	h.mu.Lock()
	var took []*waiter
	h.waiters = slices.DeleteFunc(h.waiters, func(w *waiter) bool {
		if w.sub == sub && w.match(subject) {
			took = append(took, w)
			return true
		}
		return false
	})
	if len(took) > 0 {
		h.mu.Unlock()
		for _, w := range took {
			w.refused(subject)
		}
		return
	}
	if !sub && strings.Contains(subject, consumerDelete) {
		// A consumer delete is nats.go's, in the background (a watcher
		// stopped, an ordered consumer reset): no call of ours awaits it,
		// and kept, it was the answer to the next timeout on its stream
		// (a bucket said not permitted). The consumer goes once inactive.
		h.mu.Unlock()
		return
	}
	if len(h.kept) == maxHeard {
		h.kept = slices.Delete(h.kept, 0, 1)
	}
	h.kept = append(h.kept, keptRefusal{subject: subject, sub: sub, at: time.Now()})
	h.mu.Unlock()
}

// take takes the newest refusal kept within heardMemory that match says
// is the call's: true when there was one. A refusal taken is not taken by
// a later call, but is still the answer for askedAgain after its take:
// one failure is sometimes asked of twice (a reader's and its caller's
// word on one ended fetch).
func (h *hearing) take(match func(subject string) bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	since := now.Add(-heardMemory)
	for i := len(h.kept) - 1; i >= 0 && h.kept[i].at.After(since); i-- {
		k := &h.kept[i]
		if k.sub || !match(k.subject) {
			continue
		}
		if k.taken.IsZero() {
			k.taken = now
			return true
		}
		if now.Sub(k.taken) < askedAgain {
			return true
		}
	}
	return false
}

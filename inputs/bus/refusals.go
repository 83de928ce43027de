package bus

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A lookup the bus refuses (a permission violation on the
// $JS.API.STREAM.INFO.KV_<bucket> request) gets no reply: the server says
// the violation to the connection alone (its error handler, LastError),
// and nats.go waits out its whole request timeout (5 s). LookupKV hears
// the violation on the connection's error handler and ends the lookup at
// once with a RefusedError. The handler is wrapped on a connection's
// first lookup (the handler it had is still called first), so any
// connection is heard, Connect's or not; a handler set on the connection
// after that replaces the hearing, and a refused lookup then ends as it
// did before, at its timeout, still told by Refused.

// RefusedError is a bucket's (or object store's) lookup the bus refused this connection: a
// permission violation on Subject, the lookup's request. It is a
// nats.ErrPermissionViolation (errors.Is).
type RefusedError struct {
	Bucket  string
	Stream  string // KV_<bucket> or OBJ_<store>
	Subject string
}

func (e *RefusedError) Error() string {
	return "the bus refused the lookup of bucket " + e.Bucket + " (permissions violation for publish to \"" + e.Subject + "\")"
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

// LookupObjectStore is LookupKV for an object store (js.ObjectStore): a
// refused lookup ends at once with a *RefusedError. A missing store is
// jetstream.ErrBucketNotFound (or ErrStreamNotFound), as ever.
func LookupObjectStore(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.ObjectStore, error) {
	return lookup(ctx, js, bucket, "OBJ_"+bucket, js.ObjectStore)
}

// lookup calls look for bucket (its stream stream), ending it with a
// *RefusedError as soon as the connection is refused the stream's info.
func lookup[T any](ctx context.Context, js jetstream.JetStream, bucket, stream string, look func(context.Context, string) (T, error)) (T, error) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	forget := hearingOf(js.Conn()).await(lookupSubject(stream), func(subject string) {
		cancel(&RefusedError{Bucket: bucket, Stream: stream, Subject: subject})
	})
	defer forget()
	v, err := look(lctx, bucket)
	if err != nil {
		var refused *RefusedError
		if errors.As(context.Cause(lctx), &refused) {
			var zero T
			return zero, refused
		}
	}
	return v, err
}

// hearing hands the publishes a connection is refused to the lookups
// awaiting them.
type hearing struct {
	mu      sync.Mutex
	waiters map[*waiter]struct{}
}

// waiter is one lookup awaiting a refusal of a subject ending in suffix.
type waiter struct {
	suffix  string
	refused func(subject string)
}

var (
	hearingsMu sync.Mutex
	// hearings by connection; an entry goes with its connection (the
	// hearing itself holds nothing of the connection).
	hearings = map[weak.Pointer[nats.Conn]]*hearing{}
)

// hearingOf is nc's hearing, made (and nc's error handler wrapped) on
// first use.
func hearingOf(nc *nats.Conn) *hearing {
	key := weak.Make(nc)
	hearingsMu.Lock()
	defer hearingsMu.Unlock()
	if h := hearings[key]; h != nil {
		return h
	}
	h := &hearing{waiters: map[*waiter]struct{}{}}
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		if prev != nil {
			prev(c, sub, err)
		}
		h.heard(err)
	})
	hearings[key] = h
	runtime.AddCleanup(nc, func(k weak.Pointer[nats.Conn]) {
		hearingsMu.Lock()
		delete(hearings, k)
		hearingsMu.Unlock()
	}, key)
	return h
}

// await calls refused with the subject of each publish refused from now
// on whose subject ends in suffix, until the returned forget is called.
func (h *hearing) await(suffix string, refused func(subject string)) (forget func()) {
	w := &waiter{suffix: suffix, refused: refused}
	h.mu.Lock()
	h.waiters[w] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.waiters, w)
		h.mu.Unlock()
	}
}

// heard is an error the connection reported on its own.
func (h *hearing) heard(err error) {
	subject, ok := RefusedPublish(err)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters {
		if strings.HasSuffix(subject, w.suffix) {
			w.refused(subject)
		}
	}
}

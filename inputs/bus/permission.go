package bus

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A bucket the bus refuses this connection (a permission violation, SPEC
// §4.6) is not a bucket not there yet. nats.go does not fail the refused
// call: the server's "Permissions Violation for Publish to …" arrives on
// the connection's error handler and LastError, and the call times out.
// A lookup hears it at once (LookupKV), and so does a watcher's consumer
// create (watchheard.go); after a watch that timed out, the watch asks
// Refused whether the connection heard a refusal naming this
// bucket's stream (KV_<bucket>) meanwhile: then the watch says
// NotPermitted, once, and looks again every Recheck, as for a missing
// bucket.

// notPermitted says whether err, a lookup or watch of bucket that failed,
// came of the bus refusing the connection the bucket.
func notPermitted(js jetstream.JetStream, bucket string, err error) bool {
	return Refused(js, err, "KV_"+bucket)
}

// Refused says whether err, a JetStream call on js that failed, came of
// the bus refusing the connection a subject of stream (KV_<bucket>,
// OBJ_<store>) or one holding one of also ("$O.<store>."). A
// *RefusedError (LookupKV, LookupObjectStore or HearKV heard the refusal
// during the call) is one for its stream. A call that timed out is one
// when its connection heard such a refusal that no other call took
// (within heardMemory), and that refusal is taken: a later timeout is
// not said refused for it (the same failure asked again at once, within
// askedAgain, still is). The connection's LastError is not read: it
// keeps an old violation for as long as the connection lasts, and made
// any later timeout on the stream (a stream electing its leader, the
// right since given back) "not permitted". A connection whose refusals
// are not heard (made neither by Connect nor looked up through LookupKV)
// has its LastError read, as before.
func Refused(js jetstream.JetStream, err error, stream string, also ...string) bool {
	if refused := (*RefusedError)(nil); errors.As(err, &refused) {
		return refused.Stream == stream // heard during the call (refusals.go)
	}
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
		return false
	}
	match := func(subject string) bool {
		if namesStream(subject, stream) {
			return true
		}
		for _, a := range also {
			if strings.Contains(subject, a) {
				return true
			}
		}
		return false
	}
	if h := heardOn(js.Conn()); h != nil {
		return h.take(match)
	}
	subject, ok := RefusedPublish(js.Conn().LastError())
	return ok && match(subject)
}

// sayNotPermitted delivers NotPermitted once (said keeps whether it was)
// and waits Recheck before the next look. It reports false when ctx ended.
func (w *Watch) sayNotPermitted(ctx context.Context, err error, said *bool) bool {
	if !*said {
		w.log.Warn().Err(err).Msg("the bus does not permit reading this bucket; looking again every recheck")
		if !w.send(ctx, Update{NotPermitted: true, Gone: w.forget()}) {
			return false
		}
		*said = true
	}
	switch w.pause(ctx, w.recheck()) {
	case stopCtx:
		return false
	case stopResync:
		*said = false // answer the Resync with NotPermitted again
	}
	return true
}

func (w *Watch) recheck() time.Duration {
	if w.Recheck <= 0 {
		return DefaultRecheck
	}
	return w.Recheck
}

// RefusedPublish is the subject of a publish the bus refused, when err,
// an error the connection reported on its own, says one ("nats:
// permissions violation: Permissions Violation for Publish to
// \"<subject>\"").
func RefusedPublish(err error) (subject string, ok bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return "", false
	}
	_, rest, found := strings.Cut(err.Error(), `for Publish to "`)
	if !found || !strings.HasSuffix(rest, `"`) {
		return "", false
	}
	return strings.TrimSuffix(rest, `"`), true
}

// RefusedSubscription is the subject of a subscription the bus refused,
// when err, an error the connection reported on its own, says one
// ("nats: permissions violation: Permissions Violation for Subscription
// to \"<subject>\"", maybe followed by the queue group).
func RefusedSubscription(err error) (subject string, ok bool) {
	if err == nil || !errors.Is(err, nats.ErrPermissionViolation) {
		return "", false
	}
	_, rest, found := strings.Cut(err.Error(), `for Subscription to "`)
	if !found {
		return "", false
	}
	subject, _, found = strings.Cut(rest, `"`)
	return subject, found && subject != ""
}

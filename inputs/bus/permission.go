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
// After a lookup or watch that timed out, the watch reads LastError: when
// it is a permission violation naming a subject of this bucket's stream
// (KV_<bucket>), the watch says NotPermitted, once, and looks again every
// Recheck, as for a missing bucket.

// notPermitted says whether err, a lookup or watch of bucket that failed,
// came of the bus refusing the connection the bucket.
func notPermitted(js jetstream.JetStream, bucket string, err error) bool {
	return Refused(js, err, "KV_"+bucket)
}

// Refused says whether err, a JetStream call on js that timed out, came
// of the bus refusing the connection a subject of stream (KV_<bucket>,
// OBJ_<store>) or one starting with one of also ("$O.<store>."): the
// connection's last error is a permission violation naming it. A
// *RefusedError (LookupKV or LookupObjectStore heard the refusal) is one
// for its stream.
func Refused(js jetstream.JetStream, err error, stream string, also ...string) bool {
	if refused := (*RefusedError)(nil); errors.As(err, &refused) {
		return refused.Stream == stream // LookupKV or LookupObjectStore heard the refusal (refusals.go)
	}
	if err == nil || !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
		return false
	}
	last := js.Conn().LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) {
		return false
	}
	s := last.Error()
	if strings.Contains(s, stream+`"`) || strings.Contains(s, stream+".") {
		return true
	}
	for _, a := range also {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
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

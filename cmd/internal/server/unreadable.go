package server

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A bucket the bus refuses the server (a permission violation: its user's
// rights lack the bucket's stream) is not a bucket the server cannot
// reach. nats.go does not fail the refused call: the violation comes to
// the connection's error handler and the call waits for its context. So
// a lookup goes through bus.LookupKV, which hears the violation and says
// the bucket refused at once (inputs/bus refusals.go), and a read of its
// keys goes through bus.HearKV, which does the same for the consumer the
// read makes; a refusal not heard is still told by bus.Refused once a
// first try of lookupTimeout has timed out. The sweep judges without such a bucket
// (as without a missing one) and names it in unreadable_buckets: a
// server whose rights were made before SPEC r2's sweep, without the
// assignments bucket (the controller grants a module the buckets its
// manifest reads), still sweeps the needs and says what it may not read.

// lookupTimeout bounds a bucket's lookup (JetStream's own API timeout).
var lookupTimeout = 5 * time.Second

// notPermittedError is a bucket the bus refuses the server; subject is the
// request it refused, when heard (bus.RefusedError).
type notPermittedError struct{ bucket, subject string }

func (e notPermittedError) Error() string {
	what := "its stream"
	if e.subject != "" {
		what = "a publish to \"" + e.subject + "\""
	}
	return "not permitted to read " + e.bucket + " (the bus refuses this server's user " + what + "; `mesh-provisioner rights --role " +
		spec.RoleServer + "` lists what the server reads)"
}

// refusal is err, a call on bucket that failed, as a notPermittedError
// when the bus refused it, else nil.
func refusal(js jetstream.JetStream, bucket string, err error) error {
	if err == nil || !bus.Refused(js, err, "KV_"+bucket) {
		return nil
	}
	np := notPermittedError{bucket: bucket}
	if heard := (*bus.RefusedError)(nil); errors.As(err, &heard) {
		np.subject = heard.Subject
	}
	return np
}

// isNotPermitted says whether err says a bucket was refused.
func isNotPermitted(err error) bool {
	var np notPermittedError
	return errors.As(err, &np)
}

// openBucket looks bucket up: a bucket the bus refuses this connection
// is a notPermittedError, said as soon as the bus refuses the lookup (or
// once a first try of lookupTimeout has timed out on a refusal not
// heard); one that does not exist is jetstream.ErrBucketNotFound. A
// first try that timed out for another reason (a stream electing its
// leader) is followed by one that waits as long as ctx lets it, as a
// lookup always did.
func openBucket(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	kv, err := bus.LookupKV(lctx, js, bucket)
	cancel()
	if np := refusal(js, bucket, err); np != nil {
		return nil, np
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		kv, err = bus.LookupKV(ctx, js, bucket)
		if np := refusal(js, bucket, err); np != nil {
			return nil, np
		}
	}
	return kv, err
}

// readRefusable is readLatest of kv (bucket), ended as soon as the bus
// refuses the read (bus.HearKV: the consumer its watch makes refused),
// with a notPermittedError naming the refused request; a read that timed
// out on a refusal not heard is one too (bus.Refused).
func readRefusable(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, bucket string, filters []string, metaOnly bool) (map[string]jetstream.KeyValueEntry, error) {
	var latest map[string]jetstream.KeyValueEntry
	err := bus.HearKV(ctx, js, bucket, func(ctx context.Context) (err error) {
		latest, err = readLatest(ctx, kv, filters, metaOnly)
		return err
	})
	if np := refusal(js, bucket, err); np != nil {
		return nil, np
	}
	return latest, err
}

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
// the bucket refused at once (inputs/bus refusals.go); one whose refusal
// was not heard is still told by bus.Refused once a first try of
// lookupTimeout has timed out. The sweep judges without such a bucket
// (as without a missing one) and names it in unreadable_buckets: a
// server whose rights were made before SPEC r2's sweep, without the
// assignments bucket (the controller grants a module the buckets its
// manifest reads), still sweeps the needs and says what it may not read.

// lookupTimeout bounds a bucket's lookup (JetStream's own API timeout).
var lookupTimeout = 5 * time.Second

// notPermittedError is a bucket the bus refuses the server.
type notPermittedError struct{ bucket string }

func (e notPermittedError) Error() string {
	return "not permitted to read " + e.bucket + " (the bus refuses this server's user its stream; `mesh-provisioner rights --role " +
		spec.RoleServer + "` lists what the server reads)"
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
	if err != nil && bus.Refused(js, err, "KV_"+bucket) {
		return nil, notPermittedError{bucket}
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		kv, err = bus.LookupKV(ctx, js, bucket)
		if err != nil && bus.Refused(js, err, "KV_"+bucket) {
			return nil, notPermittedError{bucket}
		}
	}
	return kv, err
}

// refusedRead is err, a read of bucket's keys that failed, as a
// notPermittedError when the bus refused it.
func refusedRead(js jetstream.JetStream, bucket string, err error) error {
	if err != nil && bus.Refused(js, err, "KV_"+bucket) {
		return notPermittedError{bucket}
	}
	return err
}

package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// WaitBucket returns the key-value bucket named bucket once it exists,
// looking again every `every` (5 s if not positive) while it does not or the
// bus does not answer. It never creates the bucket. It fails only when ctx
// ends (a bucket the bus refuses is looked for again, its last look's
// refusal said in the error).
func WaitBucket(ctx context.Context, js jetstream.JetStream, bucket string, every time.Duration) (jetstream.KeyValue, error) {
	if every <= 0 {
		every = DefaultRecheck
	}
	t := time.NewTimer(0)
	defer t.Stop()
	var last error
	for {
		select {
		case <-ctx.Done():
			if last != nil {
				return nil, fmt.Errorf("bus: waiting for bucket %s: %w (last: %v)", bucket, ctx.Err(), last)
			}
			return nil, fmt.Errorf("bus: waiting for bucket %s: %w", bucket, ctx.Err())
		case <-t.C:
		}
		kv, err := LookupKV(ctx, js, bucket) // a refused lookup ends at once (refusals.go)
		if err == nil {
			return kv, nil
		}
		if ctx.Err() == nil {
			last = err
		}
		t.Reset(every)
	}
}

// isMissing tells a bucket that does not exist from other failures.
func isMissing(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
}

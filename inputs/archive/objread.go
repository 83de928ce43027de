package archive

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus"
)

// readObject reads object name of object store bucket (obs), at most
// lim. The read is heard on the connection (bus.HearObjectStore): a
// request of it the bus refuses (the direct get of the object's
// description, the consumer of its chunks) ends it at once, said "not
// permitted to read object store <bucket>" naming the refused subject,
// rather than when the try's context ends, for a reply the bus never
// sends. Refused is asked once of the failure.
func (s *Store) readObject(ctx context.Context, obs jetstream.ObjectStore, bucket, name string, lim limits) ([]byte, error) {
	var data []byte
	var over error // the object's own size over lim: said as it is
	got := false   // the object's description was read
	err := bus.HearObjectStore(ctx, s.JS, bucket, func(ctx context.Context) error {
		res, err := obs.Get(ctx, name)
		if err != nil {
			return err
		}
		got = true
		defer res.Close()
		if info, err := res.Info(); err == nil && int64(info.Size) > lim.bytes {
			over = fmt.Errorf("%w: archive is %d bytes, over %s", ErrLimit, info.Size, mib(lim.bytes))
			return over
		}
		data, err = readLimited(res, lim)
		return err
	})
	switch {
	case err == nil:
		return data, nil
	case over != nil && errors.Is(err, over):
		return nil, over
	case refused(s.JS, bucket, err):
		err = saidRefused(bucket, err)
	case !got && errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, fmt.Errorf("%w: object %q in bucket %q: %w", ErrNotThereYet, name, bucket, err)
	}
	return nil, fmt.Errorf("object %q in bucket %q: %w", name, bucket, err)
}

package archive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus"
)

// notPermitted turns err, a look at object store bucket that failed, into
// "not permitted to read object store <bucket>" when it came of the bus
// refusing this connection the store. nats.go does not fail the refused
// call: the server's "Permissions Violation for Publish to …" arrives on
// the connection's LastError and the call times out (bus.Refused, as for
// a bucket, SPEC §4.6). A client's rights name one object store
// (spec.ArtifactsStore); without this a plan naming another failed with a
// bare "context deadline exceeded".
func notPermitted(js jetstream.JetStream, bucket string, err error) error {
	if !refused(js, bucket, err) {
		return err
	}
	return saidRefused(bucket, err)
}

// saidRefused is err, a look at object store bucket the bus refused, said
// so. Refused is asked once of a failure (notPermitted, or the caller
// itself): a refusal it takes answers it, and the same failure asked
// again answers only within a window (bus's askedAgain).
func saidRefused(bucket string, err error) error {
	return fmt.Errorf("not permitted to read object store %s (the bus refused it): %w", bucket, err)
}

// refused says whether err came of the bus refusing js object store bucket.
func refused(js jetstream.JetStream, bucket string, err error) bool {
	return bus.Refused(js, err, "OBJ_"+bucket, "$O."+bucket+".")
}

// lookupTimeout bounds one look for an obj:// ref's object store. The bus
// refusing it fails no call of nats.go's: bus.LookupObjectStore hears the
// refusal on the connection and ends the look at once; a refusal it did
// not hear (the connection's error handler set again since) times the
// look out, and only then does the connection's LastError say why
// (notPermitted). Looked for with the try's whole context, such a store
// was said at the end of the try (--fetch-timeout, 30 s); looked for in
// turns of this bound, it is said within one, and a bus merely slow to
// answer is asked again while the try lasts.
const lookupTimeout = 5 * time.Second

// objectStore looks up the object store bucket within ctx, in turns of
// lookupTimeout, and says "not permitted" as soon as a turn timed out for
// the bus refusing it.
func (s *Store) objectStore(ctx context.Context, bucket string) (jetstream.ObjectStore, error) {
	for {
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		obs, err := bus.LookupObjectStore(lctx, s.JS, bucket)
		turnEnded := lctx.Err() != nil
		cancel()
		if err == nil {
			return obs, nil
		}
		if refused(s.JS, bucket, err) { // asked once: the refusal it took is this failure's
			return nil, saidRefused(bucket, err)
		}
		if ctx.Err() != nil || !turnEnded {
			return nil, err
		}
		// Not answered within the turn, not refused: look again.
	}
}

// cutShort is why a fetch of ref ended with ctx: ctx's cause, said as the
// bus refusing the object store when it did (the refused call ends at
// the caller's deadline, not before).
func (s *Store) cutShort(ctx context.Context, ref string) error {
	err := context.Cause(ctx)
	bucket, _, ok := strings.Cut(strings.TrimPrefix(ref, "obj://"), "/")
	if !ok || !strings.HasPrefix(ref, "obj://") || s.JS == nil {
		return err
	}
	return notPermitted(s.JS, bucket, err)
}

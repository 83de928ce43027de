package archive

import (
	"context"
	"fmt"
	"strings"

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
	if !bus.Refused(js, err, "OBJ_"+bucket, "$O."+bucket+".") {
		return err
	}
	return fmt.Errorf("not permitted to read object store %s (the bus refused it): %w", bucket, err)
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

package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// DefaultMarkersKeptFor is how old a delete marker in the clients' three
// buckets (needs, applied, collect) must be before the server purges it.
//
// A client deletes a need, a report or an item with kv.Delete, which
// leaves a marker; with History 1 and nothing purging it, the marker stays
// for ever, so the buckets, and every sweep that reads them, grow with the
// mesh's whole history rather than with what is live (a sweep over 50,000
// markers took 304 ms instead of 6 ms). The marker is how a watcher hears
// that the key went: a watcher that is connected hears it within
// milliseconds, and one whose bus went away reads its bucket again when it
// reconnects (the client's watches do: inputs/bus, Resync), whose snapshot
// then lacks the key. An hour is far longer than any watcher takes to hear
// a delete while it is connected, and short enough that the markers a
// busy mesh makes in an hour are few. A watcher that follows the stream
// without reading it again after a gap of more than an hour would miss
// the delete; none of the project's does.
const DefaultMarkersKeptFor = time.Hour

// DefaultPurgeEvery is how often at most the server looks for markers to
// purge, whatever --registry-every says: a look reads the keys of the
// three buckets (not their values), which on a mesh of 100,000 needs is
// not free. It runs at the registry's pass, so a --registry-every longer
// than this spaces the looks further apart.
const DefaultPurgeEvery = time.Hour

// purgeTimeout bounds one look and purge of the three buckets.
var purgeTimeout = 10 * time.Minute

// markerBuckets are the buckets whose delete markers the server purges:
// the clients' three. The registry is the server's own, written rarely,
// and keeps its few markers.
var markerBuckets = []string{spec.NeedsBucket, spec.AppliedBucket, spec.CollectBucket}

// marker is a delete (or purge) marker: its key and its revision.
type marker struct {
	key string
	rev uint64
}

// purgeMarkers purges, in each of the clients' three buckets, the delete
// markers older than olderThan (at now); a younger marker is left as it
// is. It returns how many it purged in each bucket (only those it purged
// in). A bucket that does not exist is skipped. Errors of one bucket do not
// keep the others from being purged; they are joined.
func purgeMarkers(ctx context.Context, js jetstream.JetStream, olderThan time.Duration, now time.Time) (map[string]int, error) {
	purged := map[string]int{}
	var errs []error
	for _, b := range markerBuckets {
		n, err := purgeBucketMarkers(ctx, js, b, now.Add(-olderThan))
		if n > 0 {
			purged[b] = n
		}
		if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			errs = append(errs, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return purged, errors.Join(errs...)
}

// purgeBucketMarkers purges bucket's markers made before cutoff.
//
// It does what jetstream's KeyValue.PurgeDeletes does, with three
// differences (nats.go v1.55.0):
//   - PurgeDeletes purges the key's whole subject, so a key written again
//     between its look and its purge lost its new value; here the purge
//     stops at the marker's revision (WithPurgeSequence), so a later
//     value is never touched.
//   - PurgeDeletes sends one purge request for every marker, even one it
//     keeps (a purge keeping 1 message: nothing purged, a round trip
//     spent); here a marker younger than cutoff costs nothing.
//   - PurgeDeletes reads every value of the bucket; here the look reads
//     the keys' headers only (MetaOnly).
func purgeBucketMarkers(ctx context.Context, js jetstream.JetStream, bucket string, cutoff time.Time) (int, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return 0, fmt.Errorf("opening bucket %s: %w", bucket, err)
	}
	old, err := oldMarkers(ctx, kv, cutoff)
	if err != nil {
		return 0, err
	}
	if len(old) == 0 {
		return 0, nil
	}
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return 0, fmt.Errorf("opening the stream of bucket %s: %w", bucket, err)
	}
	return purgeListed(ctx, st, bucket, old)
}

// oldMarkers lists the keys of kv whose latest entry is a delete or purge
// marker made before cutoff, reading the watcher's snapshot (headers only)
// up to its nil marker, within readTimeout as a sweep does (a bucket
// deleted under the watcher stalls it).
func oldMarkers(ctx context.Context, kv jetstream.KeyValue, cutoff time.Time) ([]marker, error) {
	// The snapshot gives each key's latest entry, in revision order; a key
	// written while it is read comes again, later: its last entry counts.
	old := map[string]uint64{}
	err := eachInSnapshot(ctx, kv, nil, []jetstream.WatchOpt{jetstream.MetaOnly()}, func(e jetstream.KeyValueEntry) {
		if op := e.Operation(); (op == jetstream.KeyValueDelete || op == jetstream.KeyValuePurge) && e.Created().Before(cutoff) {
			old[e.Key()] = e.Revision()
		} else {
			delete(old, e.Key())
		}
	}, func() int { return len(old) })
	if err != nil {
		return nil, err
	}
	out := make([]marker, 0, len(old))
	for k, rev := range old {
		out = append(out, marker{k, rev})
	}
	return out, nil
}

// purgeListed purges each marker from st, the stream of bucket: the
// messages of its key up to and including its revision, never a later
// one (a key written again since it was listed keeps its value).
func purgeListed(ctx context.Context, st jetstream.Stream, bucket string, markers []marker) (int, error) {
	n := 0
	for _, m := range markers {
		err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+bucket+"."+m.key), jetstream.WithPurgeSequence(m.rev+1))
		if err != nil {
			return n, fmt.Errorf("purging the delete marker of %s %s: %w", bucket, m.key, err)
		}
		n++
	}
	return n, nil
}

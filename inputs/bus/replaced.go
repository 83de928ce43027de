package bus

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A bucket deleted and made again under the same name is not noticed by its
// watcher: the library's ordered consumer, once it misses the heartbeats of
// the deleted stream's consumer (10–20 s later, if ever), recreates itself on
// the new stream from the old stream's next sequence, so it skips the new
// bucket's first values and never delivers anything that says what happened.
//
// A Watch therefore tells one incarnation of its bucket from the next by its
// stream's creation time, read before the watcher is made (so a bucket
// replaced in between is seen as replaced, at worst once too often) and
// read again every replacedEvery while the watcher is live: a stream not
// found, or one created at another time, ends the watcher, and Run looks the
// bucket up again at once — Missing while it is not there, then a fresh
// Snapshot (whose Gone drops what the old bucket held). The creation time is
// kept by the server in the stream's metadata (it survives a restart) and the
// check is one STREAM.INFO request, a subject the client's account must
// publish on anyway to open the bucket. Other ways were set aside: the
// JetStream "stream deleted" advisory needs one more subscribe right and is
// lost while the bus is away; a watcher that stops delivering is the
// library's heartbeat detection (Heartbeat: minutes); a revision that goes
// backwards never shows (the recreated consumer starts past the new
// bucket's first values).
//
// What the check costs an idle daemon (issue 20, 12-01): it was one request,
// its reply and its JSON per watch every Recheck (5 s), each watch on its own
// ticker, so a node's half-dozen watches woke the process a few times a
// second between them: a tenth of an idle client's CPU. Now a watch looks
// every replacedChecks Rechecks (30 s by default; a bucket deleted and made
// again is a rare repair), and every watch of the process looks at the same
// instants (the multiples of that period on the clock), so their requests
// leave together and their replies come back together: one wake-up for all
// of them. The same look tells whether the watcher lost its consumer
// (lost.go).
// Missing buckets are still looked for every Recheck (SPEC §2.2).

// replacedChecks is how many Rechecks apart a live watch looks whether its
// bucket was replaced.
const replacedChecks = 6

// untilReplacedCheck is how long from now to the next look at a live
// watch's bucket, one in every `every` ago from the clock's zero, the same
// instants for every watch.
func untilReplacedCheck(now time.Time, every time.Duration) time.Duration {
	return every - time.Duration(now.UnixNano()%int64(every))
}

// bucketCheckTimeout bounds one look at the bucket's stream.
const bucketCheckTimeout = 5 * time.Second

// streamInfo describes kv's stream (nil if the library does not say).
func streamInfo(ctx context.Context, kv jetstream.KeyValue) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return bs.StreamInfo(), nil
	}
	return nil, nil
}

// bornOf is when a stream was made: what tells a bucket from one deleted
// and made again under its name (zero if unknown: never seen as replaced).
func bornOf(info *jetstream.StreamInfo) time.Time {
	if info == nil {
		return time.Time{}
	}
	return info.Created
}

// replaced looks at kv's stream again and says whether the bucket followed
// since `since` was deleted (and maybe made again), with what the look saw
// of the stream (nil when it saw nothing). A bus that does not answer says
// nothing: the connection's own Resync covers that.
func (w *Watch) replaced(ctx context.Context, kv jetstream.KeyValue, since time.Time) (*jetstream.StreamInfo, bool) {
	info, err := streamInfo(ctx, kv)
	now := bornOf(info)
	switch {
	case err == nil && !now.Equal(since):
		w.log.Info().Time("was_created", since).Time("now_created", now).
			Msg("bucket was deleted and made again; following the new one")
		return nil, true
	case err == nil:
		return info, false
	case isMissing(err):
		w.log.Info().Msg("bucket was deleted")
		return nil, true
	default:
		if ctx.Err() == nil {
			w.log.Debug().Err(err).Msg("cannot look at the bucket's stream; trying again later")
		}
		return nil, false
	}
}

package bus

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A watcher's consumer can be lost while the connection stays up: the
// server that held it restarted (a clustered bus, the client connected to
// another), or it was deleted. Nothing tells the subscription; its values
// simply stop coming. nats.go's ordered consumer notices only by the
// consumer's idle heartbeats stopping (two missed, then it recreates
// itself), and those heartbeats, one consumer apart from the next, were
// most of what woke an idle 100k-file node (issue 20).
//
// So the watch looks for itself, at the look it already takes at its
// bucket every replacedChecks Rechecks (replaced.go: the same instants for
// every watch, one wake-up for all of them). What it asks is the thing a
// lost consumer costs: does the bucket hold a value under the filter newer
// than the last one the watcher delivered? The stream's last sequence
// (from that look) answers it when nothing was written since the last look
// or nothing past what was delivered; otherwise the newest message under
// the filter is asked for (a direct get of the last message by subject,
// which a node's read rights allow: nodes/spec/rights.go). A newer one not
// delivered is a suspicion, not yet a loss: it may be on its way, or
// waiting in the subscription (or on the bus) behind a reader that is busy.
// It is a loss when, a Recheck later, it still has not been delivered and
// the subscription holds nothing undelivered, the message a busy reader
// holds up included. The watcher is then made again, as after a bucket
// deleted: at once, with a fresh Snapshot.
//
// A value written to a bucket whose watcher was lost so reaches the daemon
// within one look and a Recheck (35 s by default); the heartbeats took 20–40
// s from the loss. The consumer's heartbeats are kept, rare (Heartbeat), as
// the library's own safety net: a bus that cannot answer the direct get (a
// bucket made without direct gets, a mirror read under rights named for
// another subject) leaves a lost consumer to them, two heartbeats after the
// loss; the look says so in the debug log.

// behind says whether the bucket, as info (the look's stream info) saw
// it, holds a value under the watch's filter newer than the last one
// delivered: its sequence, or 0 when none is (or the bus cannot say).
func (f *feed) behind(ctx context.Context, info *jetstream.StreamInfo) uint64 {
	if info == nil {
		return 0
	}
	end := info.State.LastSeq
	if end == f.seen || end <= f.last.Load() {
		f.seen = end // nothing written since the last look, or all delivered
		return 0
	}
	newest, err := f.newest(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			f.w.log.Debug().Err(err).Msg("cannot ask the bucket for its newest value under the filter; trying again later")
		}
		return 0
	case newest <= f.last.Load():
		f.seen = end
		return 0
	}
	return newest
}

// newest is the stream sequence of the newest message under the watch's
// filter, 0 if there is none.
func (f *feed) newest(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	if f.st == nil { // one STREAM.INFO for the watcher's life, not one a look
		st, err := f.w.js.Stream(ctx, f.stream)
		if err != nil {
			return 0, err
		}
		f.st = st
	}
	// Heard (watchheard.go): a get the bus refuses ends at once, and its
	// refusal is this call's, not left for a later timeout to be taken for.
	var m *jetstream.RawStreamMsg
	err := hear(ctx, f.w.js, &RefusedError{Bucket: f.w.bucket, Stream: f.stream, Op: "read"}, f.getsNewest,
		func(ctx context.Context) (err error) {
			m, err = f.st.GetLastMsgForSubject(ctx, f.pre+f.w.filter)
			return err
		})
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return m.Sequence, nil
}

// lost says whether the watcher, suspected at the last look of missing the
// message numbered seq, lost it: still not delivered, and nothing waiting
// in the subscription to be. A busy reader's values may all be held on the
// bus (the consumer's flow control waits until the message before its
// request was delivered), but the message the callback is handing on then
// counts as pending: nats.go counts it until the callback returns
// (TestASuspicionIsALossOnlyWithNothingPending says so).
func (f *feed) lost(sub *nats.Subscription, seq uint64) bool {
	if f.last.Load() >= seq {
		return false
	}
	n, _, err := sub.Pending()
	return err == nil && n == 0
}

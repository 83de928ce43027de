package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A Sweep reads this node's keys through a KV watch: an ordered consumer,
// R1, which nats-server places on any online member holding the stream,
// not on its leader. A member started again is such a member while it
// still catches up with the stream, and reads through it then say what
// the bucket held before (or nothing at all while its store is rebuilt):
// a report older than the last one written was taken for it, so the new
// client's report equal to the older one was never put and the bucket
// kept the newer ("failed", while the file was fine) for good; a module
// gone went unseen. Only the stream's leader answers a stream info
// request, and it says how far behind it each replica's log is: the
// sweep reads a bucket once none lags (awaitReplicas), and a bucket
// whose replica has not caught up within replicaWait is not read this
// time (the stage sweeps again at its next try, and the first fill waits
// for it: stage.ReadingBack).
//
// Only this node's client writes under this node, and the last run's
// client is gone: what the sweep must read was committed before it
// starts. So under a steady stream of other nodes' writes, where a healthy
// follower is a few entries behind at any instant, a replica is behind
// only if it has not, by one look, stored what the leader had committed at
// the look before (its lag then exceeds the messages stored in between).
// What is left: a replica whose log holds an entry not yet applied to its
// store, for the moment between the two; nats-server gives a client no
// way to read from the leader alone within a client's rights (spec.Rights:
// reads by key under its node, no stream-wide message get).

// replicaWait bounds how long a Sweep waits for one bucket's replicas to
// catch up (it runs in the daemon's loop).
var replicaWait = time.Second

// replicaLook is the pause between two looks at a stream's replicas.
const replicaLook = 50 * time.Millisecond

// awaitReplicas returns once no online replica of kv's stream lags its
// leader, or an error naming the one that still does after replicaWait.
func awaitReplicas(ctx context.Context, kv jetstream.KeyValue) error {
	ctx, cancel := context.WithTimeout(ctx, replicaWait)
	defer cancel()
	var prev *jetstream.StreamInfo
	for {
		now, err := streamInfo(ctx, kv)
		if err != nil {
			if prev != nil && errors.Is(err, context.DeadlineExceeded) {
				return behind(prev, laggingReplica(nil, prev))
			}
			return err
		}
		r := laggingReplica(prev, now)
		if r == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return behind(now, r)
		case <-time.After(replicaLook):
		}
		prev = now
	}
}

// behind is the error of a stream whose replica r still lags.
func behind(info *jetstream.StreamInfo, r *jetstream.PeerInfo) error {
	return fmt.Errorf("the stream's replica on %s is %d entries behind its leader %s and was not caught up within %v: read at the next try",
		r.Name, r.Lag, info.Cluster.Leader, replicaWait)
}

// laggingReplica is an online replica of now's stream that lags: not
// current, and (when there was a look before, prev) behind by more than
// the messages stored since prev, so it has not stored yet what the
// leader had committed at prev. nil when none does (or the stream is not
// clustered).
func laggingReplica(prev, now *jetstream.StreamInfo) *jetstream.PeerInfo {
	if now.Cluster == nil {
		return nil
	}
	for _, r := range now.Cluster.Replicas {
		if r == nil || r.Offline || r.Current {
			continue
		}
		if prev != nil && now.State.LastSeq >= prev.State.LastSeq && r.Lag <= now.State.LastSeq-prev.State.LastSeq {
			continue
		}
		return r
	}
	return nil
}

package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A read of a bucket's keys goes through a consumer (a KV watch: an
// ordered consumer, R1), which nats-server places on any online member
// holding the stream, not on its leader. A member started again is such
// a member while it still catches up with the stream, and reads through
// it then say what the bucket held before, or nothing at all while its
// store is rebuilt: a client starting then read no assignment (every
// module gone: its files removed), or an older report for the last one
// written (never put again: the bucket kept a "failed" while the file was
// fine). Only the stream's leader answers a stream info request, and it
// says how far behind it each replica's log is: AwaitReplicas returns
// once none lags, and a watch (watch.go) and the start's sweep
// (report.Publisher.Caught) read a bucket only then.
//
// Only this node's client writes under this node, and what a start must
// read was committed before it starts (by the last run's client, by the
// controller). So under a steady stream of other nodes' writes, where a
// healthy follower is a few entries behind at any instant, a replica is
// behind only if it has not, by one look, stored what the leader had
// committed at the look before (its lag then exceeds the messages stored
// in between). What is left: a replica whose log holds an entry not yet
// applied to its store, for the moment between the two; nats-server gives
// a client no way to read from the leader alone within a client's rights
// (spec.Rights: reads by key under its node, no stream-wide message get).
//
// A replica on a server that crashed is counted online by the cluster for
// minutes, its lag growing: it is not waited for once it refuses this
// connection where it served it (crashed.go, with the rule's limits).

// replicaLook is the pause between two looks at a stream's replicas.
const replicaLook = 50 * time.Millisecond

// AwaitReplicas returns once no online replica of kv's stream lags its
// leader, or, after wait, a *LaggingError naming one that still does.
func AwaitReplicas(parent context.Context, kv jetstream.KeyValue, wait time.Duration) error {
	return awaitReplicas(parent, nil, kv, nil, wait)
}

// AwaitReplicasOn is AwaitReplicas for a kv of nc's, whose servers it
// knows: a replica on one nc was connected to that now refuses it
// connections there (it crashed) is not waited for (crashed.go).
func AwaitReplicasOn(parent context.Context, nc *nats.Conn, kv jetstream.KeyValue, wait time.Duration) error {
	return awaitReplicas(parent, nc, kv, nil, wait)
}

// awaitReplicas is AwaitReplicasOn (nc nil: AwaitReplicas) with first,
// when not nil, as its first look.
func awaitReplicas(parent context.Context, nc *nats.Conn, kv jetstream.KeyValue, first *jetstream.StreamInfo, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	var gone func(*jetstream.PeerInfo) bool
	if nc != nil {
		noteServer(nc)
		gone = func(r *jetstream.PeerInfo) bool { return crashed(ctx, nc, r.Name) }
	}
	var prev *jetstream.StreamInfo
	for {
		now, err := first, error(nil)
		if now == nil {
			now, err = streamInfo(ctx, kv)
		}
		first = nil
		if err == nil && now == nil {
			return nil // the library says nothing of the stream
		}
		if err != nil {
			if prev != nil && parent.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				if r := laggingReplica(nil, prev, gone); r != nil {
					return behind(prev, r, wait)
				}
				return nil
			}
			return err
		}
		r := laggingReplica(prev, now, gone)
		if r == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return parent.Err()
			}
			return behind(now, r, wait)
		case <-time.After(replicaLook):
		}
		prev = now
	}
}

// LaggingError is AwaitReplicas' error: a replica of the stream was still
// behind its leader when the wait ended.
type LaggingError struct {
	Replica, Leader string
	Lag             uint64 // entries behind
	Waited          time.Duration
}

func (e *LaggingError) Error() string {
	return fmt.Sprintf("the stream's replica on %s is %d entries behind its leader %s, not caught up within %v",
		e.Replica, e.Lag, e.Leader, e.Waited)
}

// behind is the error of a stream whose replica r still lags after wait.
func behind(info *jetstream.StreamInfo, r *jetstream.PeerInfo, wait time.Duration) error {
	return &LaggingError{Replica: r.Name, Leader: info.Cluster.Leader, Lag: r.Lag, Waited: wait}
}

// laggingReplica is an online replica of now's stream that lags: not
// current, and (when there was a look before, prev) behind by more than
// the messages stored since prev, so it has not stored yet what the
// leader had committed at prev. A replica gone says is gone (nil: none)
// is not behind: it crashed. nil when none lags (or the stream is not
// clustered).
func laggingReplica(prev, now *jetstream.StreamInfo, gone func(*jetstream.PeerInfo) bool) *jetstream.PeerInfo {
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
		if gone != nil && gone(r) {
			continue
		}
		return r
	}
	return nil
}

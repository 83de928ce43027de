package report

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A JetStream put the bus refuses this connection (its rights narrowed by
// mistake: a permission violation) is answered with a -ERR on the
// connection naming the subject, and no ack: nats.go resolves no future
// of it. A sync waiting its puts' acks waited the whole ackWait (10 s)
// for it, every fill of the batch held behind it (outputs/stage records
// items before it sends fills), and again at each retry tick while the
// rights stayed wrong. Refused, handed the subject of each permission
// violation by the connection's error handler (the daemon wires it),
// ends the wait for a put of that subject sent before it at once: the
// put is an error now, tried again at the next tick as a lost ack is.

// refusals is the subjects the bus refused, each with the refusal count
// when it was refused last.
type refusals struct {
	n    atomic.Uint64 // refusals so far
	mu   sync.Mutex
	at   map[string]uint64 // subject → n after its last refusal
	note chan struct{}     // a refusal came (cap 1; made by notes)
}

// maxRefused bounds the subjects remembered (a bus refusing every key of
// a big node): past it they are forgotten, and a put not seen refused
// waits its ackWait, as before.
const maxRefused = 4096

// Refused takes a permission violation the bus reported of subject (the
// connection's error handler calls it; it never blocks).
func (p *Publisher) Refused(subject string) {
	r := &p.refused
	r.mu.Lock()
	if r.at == nil || len(r.at) >= maxRefused {
		r.at = make(map[string]uint64)
	}
	r.at[subject] = r.n.Add(1)
	note := r.notes()
	r.mu.Unlock()
	select {
	case note <- struct{}{}:
	default:
	}
}

// notes is the channel a refusal is noted on (r.mu held).
func (r *refusals) notes() chan struct{} {
	if r.note == nil {
		r.note = make(chan struct{}, 1)
	}
	return r.note
}

// since says whether subject was refused after the count was from.
func (r *refusals) since(subject string, from uint64) bool {
	if r.n.Load() == from {
		return false // nothing refused since (no lock on every ack)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[subject] > from
}

// awaitAck waits for f, a put sent when the refusal count was from: its
// ack, its error, the bus refusing its subject, or ctx's end.
func (p *Publisher) awaitAck(ctx context.Context, f jetstream.PubAckFuture, from uint64) error {
	r := &p.refused
	r.mu.Lock()
	note := r.notes()
	r.mu.Unlock()
	subject := f.Msg().Subject
	for {
		if r.since(subject, from) {
			return fmt.Errorf("the bus refused the put (a permission violation)")
		}
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-note: // another put's, maybe: looked at again
		}
	}
}

// deleteKey deletes bucket's key (a delete marker, as kv.Delete puts) and
// waits for its ack as a put's (awaitAck, at most ackWait): a delete the
// bus refuses ends at once. Before, each delete waited its ack through
// kv.Delete until ctx's end: one refused key of a module gone held the
// start's Sweep (in the daemon's loop) its whole 10 s, failed the other
// buckets' deletes on the same deadline, and so again at every retry tick
// while the rights stayed so — fills delayed by seconds, prov.ask and the
// control socket unanswered (an outside audit).
func (p *Publisher) deleteKey(ctx context.Context, bucket, key string) error {
	if bucket == spec.AppliedBucket {
		p.acks.forgetSeqs(key) // its next put is no longer conditional
	}
	m := nats.NewMsg("$KV." + bucket + "." + key)
	m.Header.Set("KV-Operation", "DEL")
	from := p.refused.n.Load()
	f, err := p.JS.PublishMsgAsync(m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ackWait)
	defer cancel()
	return p.awaitAck(ctx, f, from)
}

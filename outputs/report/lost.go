package report

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An output bucket can lose what this node wrote there while the client
// runs: deleted (the server makes it again, empty, within seconds) or
// purged whole. What the Publisher remembers having written (written.go,
// reports, needsSynced) then says every key is in place, and nothing is
// put again until a Forget: a need whose state does not move and an
// unchanged report stayed missing until the client reconnected or
// restarted, and the server's sweep counted 0 modules and exited 0.
// LostBuckets is the look that tells; the daemon takes it at its refill
// tick (stage.CheckOutputs), one stream info request a bucket, so an idle
// client pays 3 small requests a minute and a change pays nothing.

// lookWait bounds LostBuckets' requests, all buckets together: the look
// runs in the daemon's loop, which a slow bus holds this long at most.
const lookWait = 2 * time.Second

// LostBuckets looks at each output bucket this publisher has opened and
// returns, sorted, those that lost what this node wrote there:
//   - its stream is gone;
//   - it is another stream than the one opened (its creation time
//     differs: deleted and made again, maybe written by other nodes since);
//   - it holds no message while this node has keys written there (purged
//     whole);
//   - every message that stood at the last look is gone, and so is one of
//     this node's (purged whole, then written by other nodes: a fleet's
//     first client to look writes again, and the bucket is no longer empty
//     for the others).
//
// Their handles are dropped, so the next use opens each bucket as it now
// is. What the publisher remembers having written is left as it is: the
// caller Forgets it, and its next Sweep and full send put again what is
// missing. A look that fails for another reason (the bus away, a timeout,
// a stream without a leader) says nothing of its bucket.
//
// Not seen: keys deleted or purged one by one, or purged by subject while
// older messages stand in the stream; nor a whole purge when every key
// this node holds there was put again between the last look and it.
func (p *Publisher) LostBuckets(ctx context.Context) []string {
	if !p.NC.IsConnected() {
		return nil // a request would wait out lookWait; a reconnect Forgets anyway
	}
	ctx, cancel := context.WithTimeout(ctx, lookWait)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	var lost []string
	for _, bucket := range slices.Sorted(maps.Keys(p.kvs)) {
		stored := p.storedIn(bucket) // before the request: each put it counts is in what the look sees
		info, err := streamInfo(ctx, p.kvs[bucket])
		gone := errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
		if !gone && (err != nil || !p.replaced(bucket, info, stored)) {
			continue
		}
		lost = append(lost, bucket)
		delete(p.kvs, bucket)
		delete(p.created, bucket)
		delete(p.looked, bucket)
	}
	return lost
}

// look is what a look at a bucket saw.
type look struct {
	lastSeq uint64 // the stream's last sequence
	stored  uint64 // the puts acknowledged in it before the look was asked (storedIn)
}

// replaced says whether info, stored puts acknowledged before it was
// asked, shows that bucket lost what this node wrote there (LostBuckets),
// and records it as the bucket's last look. A stream whose creation was
// not seen at opening is taken as the one opened.
//
// A key this node holds was put last either before the last look was
// asked, so its message's sequence is at most that look's last one, or
// since, and then it is one of the puts counted since: when the keys held
// outnumber those puts, one is of the first kind, and a stream whose first
// sequence is past that look's last one has lost it.
func (p *Publisher) replaced(bucket string, info *jetstream.StreamInfo, stored uint64) bool {
	was, ok := p.created[bucket]
	if !ok {
		p.created[bucket], was = info.Created, info.Created
	}
	before, looked := p.looked[bucket]
	p.looked[bucket] = look{lastSeq: info.State.LastSeq, stored: stored}
	held := p.heldKeys(bucket)
	switch {
	case !info.Created.Equal(was):
		return true
	case held == 0:
		return false
	case info.State.Msgs == 0:
		return true
	}
	return looked && info.State.FirstSeq > before.lastSeq && uint64(held) > stored-before.stored
}

// heldKeys is how many keys this node has in bucket as far as the
// publisher remembers: written, or adopted by a Sweep. A report whose put
// awaits its ack is not counted (it may be its first).
func (p *Publisher) heldKeys(bucket string) int {
	if bucket == spec.AppliedBucket {
		p.acks.mu.Lock()
		defer p.acks.mu.Unlock()
		return max(len(p.reports)-len(p.acks.pending), 0)
	}
	n := 0
	for _, t := range p.written[bucket] {
		n += t.len()
	}
	return n
}

// storedIn is how many puts in bucket this publisher saw acknowledged.
func (p *Publisher) storedIn(bucket string) uint64 {
	if bucket == spec.AppliedBucket {
		p.acks.mu.Lock()
		defer p.acks.mu.Unlock()
		return p.acks.stored
	}
	return p.stored[bucket]
}

// opened records, of bucket just opened, when its stream was created and
// what this first look saw (a request more, once a bucket is opened), so
// a loss before the first look at the refill tick is seen too; if it
// cannot be read now, that look records it.
func (p *Publisher) opened(ctx context.Context, bucket string, kv jetstream.KeyValue) {
	ctx, cancel := context.WithTimeout(ctx, lookWait)
	defer cancel()
	stored := p.storedIn(bucket)
	if info, err := streamInfo(ctx, kv); err == nil {
		p.created[bucket] = info.Created
		p.looked[bucket] = look{lastSeq: info.State.LastSeq, stored: stored}
	}
}

// streamInfo is the stream info of kv's stream: one request.
func streamInfo(ctx context.Context, kv jetstream.KeyValue) (*jetstream.StreamInfo, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		return nil, errors.New("the bucket's status holds no stream info")
	}
	return bs.StreamInfo(), nil
}

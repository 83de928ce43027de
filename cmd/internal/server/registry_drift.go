package server

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Between its passes the registry writer watches the registry bucket for
// writes other than its own (SPEC §6.1 is silent on them): a kind's entry
// changed or deleted by hand, or a key added for a kind no domain
// answers, is put back by a pass within seconds, not at the next interval
// (an hour by default), since every client of the mesh reads the registry
// and waits on a kind whose entry is gone or names another bucket. A
// write that holds what the table says (this server's own, or another
// server's of the same version) is no change, and neither is a delete of
// a key the table does not hold.
//
// The repairs back off: the first waits kickGap; each further one within
// twice the interval of the last waits twice as long as the one before,
// up to the interval. So an operator's edit is undone at once, but two
// servers of different versions on one bus (a rolling upgrade), each
// putting back what the other wrote, do not flap the mesh's registry
// every second: within a few minutes they are back to once an interval.

// registryDrift is a change of the registry by another writer: its key
// and whether it was a delete; purged: the bucket's stream was purged
// (purgeWatch), key empty.
type registryDrift struct {
	key     string
	deleted bool
	purged  bool
}

// A stream purge (`nats stream purge KV_mesh-provisioner_registry`, whole
// or of one kind's subject) takes entries away without a delete marker,
// which the watch does not hear. Between passes the writer looks at the
// bucket's count of values every purgeLook: a count short of the table's
// kinds (each has its value in the stream), or lower than at the last
// look (a write never lowers it: a key written again replaces its value,
// a delete its value by a marker), is a purge, and a drift.
var purgeLook = 5 * time.Second

// purgeWatch looks at the registry bucket's count of values. With the
// bus's JetStream at hand (js), a look asks the stream for its count of
// values by subject instead, and a kind of the table without one
// is a purge: the count alone missed a kind's subject purged between a
// pass and the first look after it while a delete marker of a key of no
// kind (which the pass had just deleted) made the count the table's again.
type purgeWatch struct {
	kv    jetstream.KeyValue
	js    jetstream.JetStream // nil: the count alone
	keys  []string            // the table's keys
	kinds int
	last  uint64 // the count at the last look
	seen  bool   // a look was made
}

// purged says whether the bucket lost values since the last look (or
// holds fewer than the table's kinds, or, with js, no value of one of
// them); false when it cannot be read (the bucket gone: a kick follows).
func (p *purgeWatch) purged(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if p.js != nil {
		return p.kindGone(ctx)
	}
	st, err := p.kv.Status(ctx)
	if err != nil {
		return false
	}
	n := st.Values()
	short := n < uint64(p.kinds) || (p.seen && n < p.last)
	p.last, p.seen = n, true
	return short
}

// kindGone says whether a kind of the table has no value in the
// registry's stream (one stream info request, its subjects counted).
func (p *purgeWatch) kindGone(ctx context.Context) bool {
	prefix := "$KV." + p.kv.Bucket() + "."
	st, err := p.js.Stream(ctx, "KV_"+p.kv.Bucket())
	if err != nil {
		return false
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return false
	}
	for _, k := range p.keys {
		if info.State.Subjects[prefix+k] == 0 {
			return true
		}
	}
	return false
}

// driftBackoff is when the next repair of a drifted registry is due.
type driftBackoff struct {
	delay time.Duration // the last repair's delay; 0: none yet
	last  time.Time     // when the last repair was asked
}

// next is the delay of a repair asked at now, the registry's interval
// being every.
func (b *driftBackoff) next(now time.Time, every time.Duration) time.Duration {
	if b.delay == 0 || now.Sub(b.last) > 2*every {
		b.delay = kickGap
	} else {
		b.delay = min(2*b.delay, every)
	}
	b.last = now
	return b.delay
}

// watchDrift watches the registry bucket for changes from now on (up to
// 256 updates are held until they are read: a pass writes at most one a
// kind), or, with current, from what it holds now on: a watch made after
// a pass (the bucket was missing before it) would miss a change made
// between the pass and the watch, so it reads every key first (what the
// pass wrote is no drift). nil when the watch could not be made (then
// only the interval puts a change back). stop ends it, and may be called
// again.
func watchDrift(ctx context.Context, kv jetstream.KeyValue, current bool) (w jetstream.KeyWatcher, stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	var opts []jetstream.WatchOpt
	if !current {
		opts = append(opts, jetstream.UpdatesOnly())
	}
	w, err := kv.Watch(wctx, ">", opts...)
	if err != nil {
		cancel()
		return nil, func() {}
	}
	var once sync.Once
	return w, func() { once.Do(func() { _ = w.Stop(); cancel() }) }
}

// drifted says whether e, an update of the registry bucket, is another
// writer's change of what want (the table, by key) holds.
func drifted(e jetstream.KeyValueEntry, want map[string][]byte) bool {
	b, ours := want[e.Key()]
	if e.Operation() != jetstream.KeyValuePut {
		return ours // a kind of the table deleted; another key deleted is as it should be
	}
	return !ours || !bytes.Equal(e.Value(), b)
}

// registryBytes is the table as the registry bucket holds it, by key.
func registryBytes(entries []Entry) map[string][]byte {
	m := make(map[string][]byte, len(entries))
	for _, e := range entries {
		m[spec.EncodeToken(e.Kind)] = EntryJSON(e)
	}
	return m
}

// waitNext waits d for the next pass, or until kick says to go on, or
// until another writer changes the registry (w; nil: not watched), or
// until short (nil: not looked at), asked at once and then every
// purgeLook, says the bucket was purged. done says ctx ended.
func waitNext(ctx context.Context, d time.Duration, kick <-chan struct{}, w jetstream.KeyWatcher, want map[string][]byte, short func() bool) (kicked bool, drift *registryDrift, done bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	var looks <-chan time.Time
	if short != nil {
		if short() { // purged since the pass
			return false, &registryDrift{deleted: true, purged: true}, false
		}
		look := time.NewTicker(purgeLook)
		defer look.Stop()
		looks = look.C
	}
	var updates <-chan jetstream.KeyValueEntry
	if w != nil {
		updates = w.Updates()
	}
	for {
		select {
		case <-ctx.Done():
			return false, nil, true
		case <-t.C:
			return false, nil, false
		case <-kick:
			return true, nil, false
		case <-looks:
			if short() {
				return false, &registryDrift{deleted: true, purged: true}, false
			}
		case e, ok := <-updates:
			switch {
			case !ok:
				updates = nil // the watch ended (the bucket deleted: a kick follows): the interval still holds
			case e != nil && drifted(e, want):
				return false, &registryDrift{key: e.Key(), deleted: e.Operation() != jetstream.KeyValuePut}, false
			}
		}
	}
}

package report

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Publisher writes one node's needs, reports and items. Safe for
// concurrent use.
type Publisher struct {
	NC   *nats.Conn
	JS   jetstream.JetStream
	Node string
	Now  func() time.Time
	// Lookup looks a bucket up (nil: JS.KeyValue). The daemon hands it
	// bus.LookupKV, which ends a lookup the bus refuses as soon as the
	// connection hears the refusal, with an error that is a
	// nats.ErrPermissionViolation (outputs may not import inputs/bus).
	Lookup func(ctx context.Context, bucket string) (jetstream.KeyValue, error)
	// Hear runs call, a read of bucket's keys (nil: call alone). The
	// daemon hands it bus.HearKV: a read the bus refuses ends at once,
	// with a nats.ErrPermissionViolation (sweep.go).
	Hear func(ctx context.Context, bucket string, call func(context.Context) error) error
	// Caught returns once no replica of kv's stream lags its leader, or an
	// error saying which does after wait (nil: read at once). The daemon
	// hands it bus.AwaitReplicas: a sweep's read goes through any member
	// of the stream, and one started again serves the bucket as it was
	// until it has caught up (sweep.go, caughtUp).
	Caught func(ctx context.Context, kv jetstream.KeyValue, wait time.Duration) error
	// Overwritten hears of a report of this node's written by someone
	// else (overwritten.go); nil: not said.
	Overwritten *Overwritten

	mu      sync.Mutex
	kvs     map[string]jetstream.KeyValue
	created map[string]time.Time         // bucket → its stream's creation time, seen when opened (lost.go)
	looked  map[string]look              // bucket → what its last look saw (lost.go)
	stored  map[string]uint64            // needs or collect bucket → puts acknowledged (the applied one's: acks.stored)
	written map[string]map[string]*table // bucket → module → what was last written of its keys (written.go)
	reports map[string]sum               // module → sum of the report bytes without "at"
	// needsSynced is, per module, the sum of the needs its last NeedsAll
	// wrote without error: the same needs again have nothing to write, and
	// are not looked at one by one (a change that moves one value of a
	// module of hundreds of needs moves none of them).
	needsSynced map[string]sum
	buf         []byte     // needsListSum's
	acks        reportAcks // PutReports' puts in flight (acks.go)
	refused     refusals   // puts the bus refused (refused.go)
	sigSeeds    [2]maphash.Seed
	keySeed     maphash.Seed         // keySum's
	lagSince    map[string]time.Time // bucket → when a sweep first found a replica of it lagging (caughtUp)
}

// sum stands for bytes, kept instead of them: a report's without its
// "at" (reportSig), a module's needs in a row (needsListSum: a prefix of
// their SHA-256). A key of the needs or collect buckets has a keySum of
// 64 bits instead: there are tens of thousands.
type sum [16]byte

func sumOf(b []byte) sum {
	s := sha256.Sum256(b)
	return sum(s[:16])
}

// keySum stands for the bytes written to a key of the needs or collect
// bucket, or for the fields a need's bytes encode, in what a Publisher
// remembers of them (written.go): a 64-bit maphash under a seed of this
// process, never 0 (a need's fields not known). 64 bits are enough: a sum
// is only compared with the earlier sums of the same key in this process,
// whose inputs cannot be chosen against a seed they do not know, so two
// different bytes pass for the same with a chance of 2^-64 per comparison
// (one put in ~10^19 skipped; a node making a thousand comparisons a
// second would meet it once in ~500 million years). What that would cost
// is one key left as it was until its bytes change again or the next
// Forget. 128 bits would hold 8 B more per key (~40 B a file at 10k files).
func (p *Publisher) keySum(b []byte) uint64 {
	return max(maphash.Bytes(p.keySeed, b), 1)
}

// needSum is the sum of a need's fields, each preceded by its length.
func (p *Publisher) needSum(n *Need) uint64 {
	var buf [256]byte
	return p.keySum(appendNeed(buf[:0], n))
}

func appendNeed(b []byte, n *Need) []byte {
	for _, f := range [...]string{n.Node, n.Module, n.Kind, n.Name, n.State, n.Why} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// needsListSum is the sum of a module's needs, in their order.
func (p *Publisher) needsListSum(needs []Need) sum {
	b := p.buf[:0]
	for i := range needs {
		b = appendNeed(b, &needs[i])
	}
	p.buf = b
	return sumOf(b)
}

func (p *Publisher) init() {
	if p.kvs == nil {
		p.kvs = map[string]jetstream.KeyValue{}
		p.created = map[string]time.Time{}
		p.looked = map[string]look{}
		p.stored = map[string]uint64{}
		p.written = map[string]map[string]*table{}
		p.reports = map[string]sum{}
		p.needsSynced = map[string]sum{}
		p.sigSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		p.keySeed = maphash.MakeSeed()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
}

// errNotConnected is why a bucket is not looked up while the bus is away.
var errNotConnected = errors.New("not looked up while the bus is not connected")

// errNoBucket is why a bucket that does not exist (yet) is not opened.
var errNoBucket = errors.New("does not exist yet")

func (p *Publisher) kv(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if kv := p.kvs[bucket]; kv != nil {
		return kv, nil
	}
	// Looking a bucket up is a request: while the bus is away it would
	// wait out its whole timeout (5 s) in the daemon's loop, once per
	// bucket not yet opened at every retry, and the control socket
	// (status, explain) would stop answering. It is looked up again once
	// the bus is back.
	if p.NC != nil && !p.NC.IsConnected() {
		return nil, fmt.Errorf("bucket %s: %w", bucket, errNotConnected)
	}
	look := p.Lookup
	if look == nil {
		look = p.JS.KeyValue
	}
	kv, err := look(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s %w", bucket, errNoBucket)
	}
	if errors.Is(err, nats.ErrPermissionViolation) {
		// Refused, not slow: said so, and looked up again at the next
		// call (the rights may be given back).
		return nil, fmt.Errorf("not permitted to write %s: %w", bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	p.kvs[bucket] = kv
	p.opened(ctx, bucket, kv)
	return kv, nil
}

// Forget drops what this process remembers having written, so everything
// is compared against the bus again (after a reconnect the bus may have
// lost or kept writes; writing the same bytes again is harmless).
func (p *Publisher) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.written = map[string]map[string]*table{}
	p.reports = map[string]sum{}
	p.needsSynced = map[string]sum{}
	p.acks.forgetSeqs()
}

// setTable records what was last written of module's keys in bucket
// (nil: none).
func (p *Publisher) setTable(bucket, module string, t *table) {
	if t == nil {
		delete(p.written[bucket], module)
		return
	}
	if p.written[bucket] == nil {
		p.written[bucket] = map[string]*table{}
	}
	p.written[bucket][module] = t
}

// want is one key a sync wants, by its name (written.go).
type want struct {
	name   string
	v      []byte // nil: keep what is written
	fields uint64 // a need's fields' sum (0 but for needs)
}

// sortWants sorts ws by name; of two of one name, the later given wins.
func sortWants(ws []want) []want {
	slices.SortStableFunc(ws, func(a, b want) int { return strings.Compare(a.name, b.name) })
	out := ws[:0]
	for i := range ws {
		if i+1 < len(ws) && ws[i+1].name == ws[i].name {
			continue
		}
		out = append(out, ws[i])
	}
	return out
}

// syncOp is one module's sync under way: its puts are in flight.
type syncOp struct {
	bucket, module string
	prefix, suffix string // the module's keys' affixes
	want           []want // sorted by name
	acks           []pendingPut
	errs           []error
	kv             jetstream.KeyValue
}

func (op *syncOp) key(name string) string { return op.prefix + name + op.suffix }

type pendingPut struct {
	name          string
	bytes, fields uint64
	ack           jetstream.PubAckFuture
	refusedBefore uint64 // the refusal count when it was sent (refused.go)
}

// issue sends the puts of a sync without waiting for their acks.
func (p *Publisher) issue(ctx context.Context, bucket, module string, ws []want) *syncOp {
	op := &syncOp{bucket: bucket, module: module, want: ws}
	op.prefix, op.suffix = p.affixes(bucket, module)
	kv, err := p.kv(ctx, bucket)
	if err != nil {
		op.errs = append(op.errs, err)
		return op
	}
	op.kv = kv
	t := p.written[bucket][module]
	limit := p.maxPayload()
	for i := range ws {
		w := &ws[i]
		if w.v == nil {
			continue
		}
		s := p.keySum(w.v)
		if j, ok := t.find(w.name); ok && t.bytes[j] == s {
			if w.fields != 0 {
				t.set(j, s, w.fields) // what is written encodes these fields
			}
			continue
		}
		k := op.key(w.name)
		if err := fits(w.v, limit, bucket+" "+k); err != nil {
			op.errs = append(op.errs, err)
			continue
		}
		before := p.refused.n.Load()
		f, err := p.JS.PublishAsync("$KV."+bucket+"."+k, w.v)
		if err != nil {
			op.errs = append(op.errs, fmt.Errorf("%s %s: %w", bucket, k, err))
			continue
		}
		op.acks = append(op.acks, pendingPut{w.name, s, w.fields, f, before})
	}
	return op
}

// finish awaits a sync's acks, records what was written and deletes what is
// no longer wanted. ctx bounds the wait (syncAll gives every op in flight
// one ackWait).
func (p *Publisher) finish(ctx context.Context, op *syncOp) error {
	if op.kv == nil {
		return errors.Join(op.errs...)
	}
	t := p.written[op.bucket][op.module]
	errs := op.errs
	var add []entry // keys written that t lacks, in name order (as put)
	stored := uint64(0)
	for _, a := range op.acks {
		if err := p.awaitAck(ctx, a.ack, a.refusedBefore); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", op.bucket, op.key(a.name), err))
			continue
		}
		stored++
		if j, ok := t.find(a.name); ok {
			t.set(j, a.bytes, a.fields)
		} else {
			add = append(add, entry{a.name, a.bytes, a.fields})
		}
	}
	p.stored[op.bucket] += stored
	var drop []string // keys deleted, in name order
	ws := op.want
	for j := range t.len() {
		name := t.name(j)
		for len(ws) > 0 && ws[0].name < name {
			ws = ws[1:]
		}
		if len(ws) > 0 && ws[0].name == name {
			continue
		}
		k := op.key(name)
		if err := p.deleteKey(ctx, op.bucket, k); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: delete: %w", op.bucket, k, err))
			continue
		}
		drop = append(drop, name)
	}
	if len(add) > 0 || len(drop) > 0 {
		p.setTable(op.bucket, op.module, t.with(add, drop, op.bucket == spec.NeedsBucket))
	}
	return errors.Join(errs...)
}

// ackWait bounds how long a sync waits for its puts' acks (a variable for
// a test to shorten).
var ackWait = 10 * time.Second

// maxInFlight bounds the puts NeedsAll has in flight (below the JetStream
// context's limit on pending async publishes).
const maxInFlight = 2000

// NeedsAll makes each module's needs exactly those given, with the puts of
// many modules in flight together (a cold start writes tens of thousands).
// It returns each module's error, if any.
func (p *Publisher) NeedsAll(ctx context.Context, needs map[string][]Need) map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	sums := make(map[string]sum, len(needs))
	for m, n := range needs {
		s := p.needsListSum(n)
		if old, ok := p.needsSynced[m]; ok && old == s {
			continue
		}
		sums[m] = s
	}
	if len(sums) == 0 {
		return map[string]error{} // nothing moved: no sync, no ackWait armed
	}
	// Each module's needs are encoded just before its puts go out, not all
	// at once: a cold start's tens of thousands of encoded needs were the
	// client's peak of memory.
	errs := p.syncAll(ctx, spec.NeedsBucket, slices.Collect(maps.Keys(sums)),
		func(m string) []want { return p.needsWant(m, needs[m]) })
	for m, s := range sums {
		if errs[m] == nil && len(needs[m]) > 0 {
			p.needsSynced[m] = s
		} else {
			// Failed, or none (the module left): nothing kept of it, so a
			// node that churns modules keeps no entry per module gone.
			delete(p.needsSynced, m)
		}
	}
	return errs
}

// syncAll makes each module's keys in bucket exactly its want (wantOf,
// asked when the module's turn comes): it puts
// what differs from what was last written and deletes what is no longer
// wanted (a nil value keeps what is recorded for that key). The puts of
// all modules are in flight together, up to maxInFlight, before their acks
// are awaited; it returns each module's error, if any.
func (p *Publisher) syncAll(ctx context.Context, bucket string, modules []string, wantOf func(module string) []want) map[string]error {
	sort.Strings(modules)
	out := map[string]error{}
	var ops []*syncOp
	inFlight := 0
	flush := func() {
		// An ack lost with a connection never comes: the ops in flight
		// wait one ackWait together, and what was not acknowledged is
		// written again at the next call. (Each op waiting its own
		// ackWait in turn held the daemon's loop for 10 s per module
		// after a whole cluster restarted: chaos seed 342810.)
		fctx, cancel := context.WithTimeout(ctx, ackWait)
		defer cancel()
		for _, op := range ops {
			if err := p.finish(fctx, op); err != nil {
				out[op.module] = err
			}
		}
		clear(ops) // their wants go now
		ops, inFlight = ops[:0], 0
	}
	for _, m := range modules {
		op := p.issue(ctx, bucket, m, wantOf(m))
		ops = append(ops, op)
		if inFlight += len(op.acks); inFlight >= maxInFlight {
			flush()
		}
	}
	flush()
	return out
}

// NeedsSome puts each module's needs in put and keeps every other need
// of the module as written, but those whose kind and name (EncodeKey(kind,
// name)) named[module] does not hold, when it is not nil: a module failing
// at plan level has its failed needs written while its others, their
// states not known then, stay as they are, and a need no template of it
// names any more is deleted (SPEC §5.2, §4.7). Deleted are only keys this
// process wrote or adopted, as by NeedsAll. It returns each module's
// error, if any.
func (p *Publisher) NeedsSome(ctx context.Context, put map[string][]Need, named map[string]map[string]bool) map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	modules := slices.Collect(maps.Keys(put))
	for _, m := range modules {
		delete(p.needsSynced, m) // a later NeedsAll of the list synced last is no longer a no-op
	}
	return p.syncAll(ctx, spec.NeedsBucket, modules, func(m string) []want {
		keep := named[m]
		t := p.written[spec.NeedsBucket][m]
		ws := make([]want, 0, t.len()+len(put[m]))
		for j := range t.len() {
			if name := t.name(j); keep == nil || keep[name] {
				ws = append(ws, want{name: name}) // kept as written
			}
		}
		return sortWants(append(ws, p.needsWant(m, put[m])...)) // a put wins over its keep
	})
}

// Needs makes module's needs exactly needs.
func (p *Publisher) Needs(ctx context.Context, module string, needs []Need) error {
	return p.NeedsAll(ctx, map[string][]Need{module: needs})[module]
}

// needsWant is a module's needs encoded, by name, each with the sum of
// its fields. A need whose bytes last written encoded the same fields is
// not encoded again: its v is nil (keep what is written).
func (p *Publisher) needsWant(module string, needs []Need) []want {
	ws := make([]want, len(needs))
	t := p.written[spec.NeedsBucket][module]
	for i := range needs {
		n := &needs[i]
		w := &ws[i]
		w.name, w.fields = spec.EncodeKey(n.Kind, n.Name), p.needSum(n)
		if j, ok := t.find(w.name); ok && t.fieldsAt(j) == w.fields {
			continue
		}
		bounded := *n
		bounded.Why = Bound(n.Why)
		w.v = encode(&bounded)
	}
	return sortWants(ws)
}

// Items makes module's items in mesh-provisioner_collect exactly items
// (collection → text), at <node>.<collection>.<module>: an item is put only
// when its bytes differ from what is recorded, and this module's items not
// in items are deleted. A nil text keeps what is recorded for that
// collection (the item is still the module's but has no text in this run
// yet); an empty item is a non-nil empty text.
func (p *Publisher) Items(ctx context.Context, module string, items map[string][]byte) error {
	return p.ItemsAll(ctx, map[string]map[string][]byte{module: items})[module]
}

// ItemsAll does what Items does for several modules (module → collection
// → text), their puts in flight together; it returns each module's error.
func (p *Publisher) ItemsAll(ctx context.Context, items map[string]map[string][]byte) map[string]error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	wants := make(map[string][]want, len(items))
	limit := p.maxPayload()
	tooLarge := map[string][]error{}
	for module, its := range items {
		ws := make([]want, 0, len(its))
		for c, text := range its {
			name := spec.EncodeToken(c)
			if text == nil {
				ws = append(ws, want{name: name})
				continue
			}
			b := encode(Item{Collection: c, Contributor: module, Item: string(text)})
			if err := fits(b, limit, "item of collection "+c); err != nil {
				// Not recorded, and what was is deleted (as a failed
				// item's is): the bus would refuse it at every try.
				tooLarge[module] = append(tooLarge[module], err)
				continue
			}
			ws = append(ws, want{name: name, v: b})
		}
		wants[module] = sortWants(ws)
	}
	errs := p.syncAll(ctx, spec.CollectBucket, slices.Collect(maps.Keys(wants)),
		func(m string) []want { return wants[m] })
	for module, tl := range tooLarge {
		errs[module] = errors.Join(append(tl, errs[module])...)
	}
	return errs
}

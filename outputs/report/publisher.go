package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
)

// Publisher writes one node's needs, reports and items. Safe for
// concurrent use.
type Publisher struct {
	NC   *nats.Conn
	JS   jetstream.JetStream
	Node string
	Now  func() time.Time

	mu      sync.Mutex
	kvs     map[string]jetstream.KeyValue
	written map[string]map[string][]byte // bucket → key → bytes last written
	reports map[string][]byte            // module → report bytes without "at"
}

func (p *Publisher) init() {
	if p.kvs == nil {
		p.kvs = map[string]jetstream.KeyValue{}
		p.written = map[string]map[string][]byte{}
		p.reports = map[string][]byte{}
	}
	if p.Now == nil {
		p.Now = time.Now
	}
}

func (p *Publisher) kv(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if kv := p.kvs[bucket]; kv != nil {
		return kv, nil
	}
	kv, err := p.JS.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s does not exist yet", bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", bucket, err)
	}
	p.kvs[bucket] = kv
	return kv, nil
}

// Forget drops what this process remembers having written, so everything
// is compared against the bus again (after a reconnect the bus may have
// lost or kept writes; writing the same bytes again is harmless).
func (p *Publisher) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.written = map[string]map[string][]byte{}
	p.reports = map[string][]byte{}
}

// sync makes the keys under prefix in bucket exactly want: puts what
// differs from what was last written, deletes what is no longer wanted.
func (p *Publisher) sync(ctx context.Context, bucket, prefix string, want map[string][]byte) error {
	kv, err := p.kv(ctx, bucket)
	if err != nil {
		return err
	}
	if p.written[bucket] == nil {
		p.written[bucket] = map[string][]byte{}
	}
	done := p.written[bucket]
	var errs []error
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := want[k]
		if old, ok := done[k]; ok && bytes.Equal(old, v) {
			continue
		}
		if _, err := kv.Put(ctx, k, v); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", bucket, k, err))
			continue
		}
		done[k] = v
	}
	for k := range done {
		if _, ok := want[k]; ok || !hasPrefix(k, prefix) {
			continue
		}
		if err := kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			errs = append(errs, fmt.Errorf("%s %s: delete: %w", bucket, k, err))
			continue
		}
		delete(done, k)
	}
	return errors.Join(errs...)
}

func hasPrefix(k, prefix string) bool { return len(k) >= len(prefix) && k[:len(prefix)] == prefix }

// Needs makes module's needs exactly needs.
func (p *Publisher) Needs(ctx context.Context, module string, needs []Need) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	want := make(map[string][]byte, len(needs))
	for _, n := range needs {
		b, _ := json.Marshal(n)
		want[nodes.EncodeKey(p.Node, module, n.Kind, n.Name)] = b
	}
	return p.sync(ctx, nodes.NeedsBucket, nodes.EncodeKey(p.Node, module)+".", want)
}

// Items makes module's items in mesh-provisioner_collect exactly items
// (collection → text), at <node>.<collection>.<module>: an item is put only
// when its bytes differ from what is recorded, and this module's items not
// in items are deleted. A nil text keeps what is recorded for that
// collection (the item is still the module's but has no text in this run
// yet); an empty item is a non-nil empty text.
func (p *Publisher) Items(ctx context.Context, module string, items map[string][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	want := make(map[string][]byte, len(items))
	for c, text := range items {
		k := nodes.EncodeKey(p.Node, c, module)
		if text == nil {
			want[k] = nil
			continue
		}
		b, _ := json.Marshal(Item{Collection: c, Contributor: module, Item: string(text)})
		want[k] = b
	}
	return p.syncItems(ctx, module, want)
}

// syncItems is sync over the collect bucket, whose keys put the
// contributor last: only this module's keys are compared.
func (p *Publisher) syncItems(ctx context.Context, module string, want map[string][]byte) error {
	kv, err := p.kv(ctx, nodes.CollectBucket)
	if err != nil {
		return err
	}
	if p.written[nodes.CollectBucket] == nil {
		p.written[nodes.CollectBucket] = map[string][]byte{}
	}
	done := p.written[nodes.CollectBucket]
	suffix := "." + nodes.EncodeToken(module)
	var errs []error
	for k, v := range want {
		if v == nil {
			continue // kept as recorded
		}
		if old, ok := done[k]; ok && bytes.Equal(old, v) {
			continue
		}
		if _, err := kv.Put(ctx, k, v); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", nodes.CollectBucket, k, err))
			continue
		}
		done[k] = v
	}
	for k := range done {
		if _, ok := want[k]; ok || len(k) < len(suffix) || k[len(k)-len(suffix):] != suffix {
			continue
		}
		if err := kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			errs = append(errs, err)
			continue
		}
		delete(done, k)
	}
	return errors.Join(errs...)
}

// DeleteStaleItems reads this node's items in the collect bucket (on
// start, so that nothing stale lives on): it deletes those whose contributor
// is not live (a module no longer on this node), and remembers the others as
// recorded, so that an item whose text did not change is not written again
// and one its module no longer contributes is deleted by the next Items. It
// says how many it deleted.
func (p *Publisher) DeleteStaleItems(ctx context.Context, live func(contributor string) bool) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	kv, err := p.kv(ctx, nodes.CollectBucket)
	if err != nil {
		return 0, err
	}
	lister, err := kv.ListKeysFiltered(ctx, nodes.EncodeToken(p.Node)+".>")
	if err != nil {
		return 0, fmt.Errorf("%s: listing this node's items: %w", nodes.CollectBucket, err)
	}
	var stale, kept []string
	for k := range lister.Keys() {
		toks, err := nodes.DecodeKey(k, 3)
		switch {
		case err != nil:
			// out of shape: not ours to judge (the server's query says it)
		case !live(toks[2]):
			stale = append(stale, k)
		default:
			kept = append(kept, k)
		}
	}
	if p.written[nodes.CollectBucket] == nil {
		p.written[nodes.CollectBucket] = map[string][]byte{}
	}
	done := p.written[nodes.CollectBucket]
	for _, k := range kept {
		if _, ok := done[k]; ok {
			continue
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", nodes.CollectBucket, k, err)
		}
		done[k] = e.Value()
	}
	n := 0
	for _, k := range stale {
		if err := kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return n, fmt.Errorf("%s %s: delete: %w", nodes.CollectBucket, k, err)
		}
		delete(done, k)
		n++
	}
	return n, nil
}

// Report writes r to the applied bucket and publishes it on
// prov.applied.<node>.<module>, only when it differs from the last report
// written ("at" aside). It says whether it wrote.
func (p *Publisher) Report(ctx context.Context, r Report) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	r.Node = p.Node
	if r.Files == nil {
		r.Files = []File{}
	}
	cmp := r
	cmp.At = ""
	sig, _ := json.Marshal(cmp)
	if old, ok := p.reports[r.Module]; ok && bytes.Equal(old, sig) {
		return false, nil
	}
	r.At = p.Now().UTC().Format(time.RFC3339)
	b, _ := json.Marshal(r)
	key := nodes.EncodeKey(p.Node, r.Module)
	kv, err := p.kv(ctx, nodes.AppliedBucket)
	if err != nil {
		return false, err
	}
	if r.State == "removed" {
		if err := kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, err
		}
	} else if _, err := kv.Put(ctx, key, b); err != nil {
		return false, err
	}
	if err := p.NC.Publish("prov.applied."+key, b); err != nil {
		return false, err
	}
	if r.State == "removed" {
		delete(p.reports, r.Module)
	} else {
		p.reports[r.Module] = sig
	}
	return true, nil
}

// Changed publishes prov.changed.<node>.<module>: {"kind","key"}, or
// {"kind"} alone (every key) when key is empty. Never a value.
func (p *Publisher) Changed(module, kind, key string) error {
	msg := map[string]string{"kind": kind}
	if key != "" {
		msg["key"] = key
	}
	b, _ := json.Marshal(msg)
	return p.NC.Publish("prov.changed."+nodes.EncodeKey(p.Node, module), b)
}

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

// Items makes module's items exactly items (collection → text).
func (p *Publisher) Items(ctx context.Context, module string, items map[string][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	want := make(map[string][]byte, len(items))
	for c, text := range items {
		b, _ := json.Marshal(Item{Collection: c, Contributor: module, Item: string(text)})
		want[nodes.EncodeKey(p.Node, c, module)] = b
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

// DeleteStaleItems deletes this node's items whose contributor is not in
// live (on start: nothing stale lives on). It reads the bucket's keys for
// this node.
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
		return 0, err
	}
	var stale []string
	for k := range lister.Keys() {
		toks, err := nodes.DecodeKey(k, 3)
		if err != nil || !live(toks[2]) {
			if err == nil {
				stale = append(stale, k)
			}
		}
	}
	for _, k := range stale {
		if err := kv.Delete(ctx, k); err != nil {
			return 0, err
		}
		delete(p.written[nodes.CollectBucket], k)
	}
	return len(stale), nil
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

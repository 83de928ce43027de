package server

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// readTimeout bounds how long reading a bucket's keys up to the watcher's
// end-of-snapshot marker may take.
var readTimeout = 30 * time.Second

// readAll returns the latest entry of every key of kv matching one of the
// filters (all keys when there are none), sorted by key. It reads the
// watcher's snapshot up to its nil marker, so nothing is cut off; a key
// written twice during the read counts once, at its latest revision.
// metaOnly leaves the values out.
func readAll(ctx context.Context, kv jetstream.KeyValue, filters []string, metaOnly bool) ([]jetstream.KeyValueEntry, error) {
	latest, err := readLatest(ctx, kv, filters, metaOnly)
	if err != nil {
		return nil, err
	}
	out := make([]jetstream.KeyValueEntry, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// readLatest is readAll unsorted: the latest entry of each key, by key.
func readLatest(ctx context.Context, kv jetstream.KeyValue, filters []string, metaOnly bool) (map[string]jetstream.KeyValueEntry, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if metaOnly {
		opts = append(opts, jetstream.MetaOnly())
	}
	// WatchFiltered rewrites the slice it is given: hand it a copy.
	w, err := kv.WatchFiltered(wctx, append([]string(nil), filters...), opts...)
	if err != nil {
		return nil, fmt.Errorf("watching bucket %s %v: %w", kv.Bucket(), filters, err)
	}
	defer func() { _ = w.Stop() }()

	latest := make(map[string]jetstream.KeyValueEntry)
	timer := time.NewTimer(readTimeout)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("reading bucket %s: watcher closed before its snapshot was complete (%d keys read)", kv.Bucket(), len(latest))
			}
			if e == nil {
				return latest, nil
			}
			if e.Operation() != jetstream.KeyValuePut {
				delete(latest, e.Key())
				continue
			}
			if old, ok := latest[e.Key()]; !ok || old.Revision() < e.Revision() {
				latest[e.Key()] = e
			}
		case <-timer.C:
			return nil, fmt.Errorf("reading bucket %s: snapshot not complete after %s (%d keys read)", kv.Bucket(), readTimeout, len(latest))
		case <-ctx.Done():
			return nil, fmt.Errorf("reading bucket %s: %w", kv.Bucket(), ctx.Err())
		}
	}
}

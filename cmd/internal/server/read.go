package server

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// readTimeout bounds how long reading a bucket's keys up to the watcher's
// end-of-snapshot marker may take.
var readTimeout = 30 * time.Second

// replicaWait bounds the wait for a bucket's replicas to catch up before
// it is read (eachInSnapshot); a test of the wait itself makes it long.
var replicaWait = time.Second

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
	return sortedEntries(latest), nil
}

// sortedEntries is latest's entries sorted by key.
func sortedEntries(latest map[string]jetstream.KeyValueEntry) []jetstream.KeyValueEntry {
	out := make([]jetstream.KeyValueEntry, 0, len(latest))
	for _, e := range latest {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// readLatest is readAll unsorted: the latest entry of each key, by key.
func readLatest(ctx context.Context, kv jetstream.KeyValue, filters []string, metaOnly bool) (map[string]jetstream.KeyValueEntry, error) {
	opts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if metaOnly {
		opts = append(opts, jetstream.MetaOnly())
	}
	latest := make(map[string]jetstream.KeyValueEntry)
	err := eachInSnapshot(ctx, kv, filters, opts, func(e jetstream.KeyValueEntry) {
		if e.Operation() != jetstream.KeyValuePut {
			delete(latest, e.Key())
			return
		}
		if old, ok := latest[e.Key()]; !ok || old.Revision() < e.Revision() {
			latest[e.Key()] = e
		}
	}, func() int { return len(latest) })
	if err != nil {
		return nil, err
	}
	return latest, nil
}

// eachInSnapshot reads the snapshot of kv under filters (">" when none),
// up to its end-of-initial-values marker, handing each entry to each; it
// gives up after readTimeout (a bucket deleted under the watcher stalls
// it). read says, for an error, how many keys were read.
func eachInSnapshot(ctx context.Context, kv jetstream.KeyValue, filters []string, opts []jetstream.WatchOpt,
	each func(jetstream.KeyValueEntry), read func() int) error {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	// Not through a member of the stream still catching up, which serves
	// the bucket as it was (inputs/bus/replicas.go): waited for a second,
	// then read all the same (a sweep answers a request, and a member that
	// never catches up would hold every one).
	_ = bus.AwaitReplicas(ctx, kv, replicaWait)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// WatchFiltered rewrites the slice it is given: hand it a copy.
	w, err := kv.WatchFiltered(wctx, append([]string(nil), filters...), opts...)
	if err != nil {
		// The filters are cut: built from a request's names, they once
		// made the refusal too large for the bus (maxEchoed).
		return fmt.Errorf("watching bucket %s %s: %w", kv.Bucket(), spec.Cut(fmt.Sprint(filters), maxEchoed), err)
	}
	defer func() { _ = w.Stop() }()
	timer := time.NewTimer(readTimeout)
	defer timer.Stop()
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("reading bucket %s: watcher closed before its snapshot was complete (%d keys read)", kv.Bucket(), read())
			}
			if e == nil {
				return nil
			}
			each(e)
		case <-timer.C:
			return fmt.Errorf("reading bucket %s: snapshot not complete after %s (%d keys read)", kv.Bucket(), readTimeout, read())
		case <-ctx.Done():
			return fmt.Errorf("reading bucket %s: %w", kv.Bucket(), ctx.Err())
		}
	}
}

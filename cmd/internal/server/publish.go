package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// PublishRegistry makes the registry bucket hold exactly entries: each
// entry is put at its kind only where the stored bytes differ (an unchanged
// key keeps its revision), and every key whose kind is not among entries is
// deleted. It returns how many keys it wrote and deleted.
func PublishRegistry(ctx context.Context, kv jetstream.KeyValue, entries []Entry) (written, deleted int, err error) {
	want := make(map[string]bool, len(entries))
	for _, e := range entries {
		key := spec.EncodeToken(e.Kind)
		want[key] = true
		b := EntryJSON(e)
		cur, err := kv.Get(ctx, key)
		switch {
		case err == nil && bytes.Equal(cur.Value(), b):
			continue
		case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
			return written, deleted, fmt.Errorf("reading registry kind %s: %w", e.Kind, err)
		}
		if _, err := kv.Put(ctx, key, b); err != nil {
			return written, deleted, fmt.Errorf("writing registry kind %s: %w", e.Kind, err)
		}
		written++
	}
	stored, err := readAll(ctx, kv, nil, true)
	if err != nil {
		return written, deleted, fmt.Errorf("listing registry kinds: %w", err)
	}
	for _, s := range stored {
		if want[s.Key()] {
			continue
		}
		if err := kv.Delete(ctx, s.Key()); err != nil {
			return written, deleted, fmt.Errorf("deleting registry key %s: %w", s.Key(), err)
		}
		deleted++
	}
	return written, deleted, nil
}

// retryAfterFailure is how soon RunRegistry tries again after a publish
// that failed, when that is sooner than its interval.
var retryAfterFailure = 5 * time.Second

// RunRegistry publishes Registry() to kv at once and then every interval
// (after a failure, again within retryAfterFailure), until ctx ends.
func RunRegistry(ctx context.Context, kv jetstream.KeyValue, every time.Duration, log zerolog.Logger) {
	runRegistry(ctx, kv, every, log, nil)
}

// runRegistry is RunRegistry counting its writes in stats (nil: not counted).
func runRegistry(ctx context.Context, kv jetstream.KeyValue, every time.Duration, log zerolog.Logger, stats *Stats) {
	if every <= 0 {
		every = time.Hour
	}
	for {
		wait := every
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		written, deleted, err := PublishRegistry(pctx, kv, Registry())
		cancel()
		stats.published(written, deleted)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Error().Err(err).Str("bucket", kv.Bucket()).Msg("registry not published")
			wait = min(every, retryAfterFailure)
		case written > 0 || deleted > 0:
			log.Info().Str("bucket", kv.Bucket()).Int("written", written).Int("deleted", deleted).Msg("registry published")
		default:
			log.Debug().Str("bucket", kv.Bucket()).Msg("registry unchanged")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

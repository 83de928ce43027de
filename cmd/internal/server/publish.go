package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
		cur, err := getOne(ctx, kv, key)
		switch {
		case err == nil && bytes.Equal(cur.Value(), b):
			continue
		case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
			return written, deleted, fmt.Errorf("reading registry kind %s: %w", e.Kind, err)
		}
		if err := putOne(ctx, kv, key, b); err != nil {
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
		if err := deleteOne(ctx, kv, s.Key()); err != nil {
			return written, deleted, fmt.Errorf("deleting registry key %s: %w", s.Key(), err)
		}
		deleted++
	}
	return written, deleted, nil
}

// opTimeout bounds one JetStream call of a registry pass. A put whose ack
// is lost (the bucket deleted while the put was on its way: the stream
// took it and never answered) otherwise waited out the pass's minute,
// and the bucket deleted stayed missing as long; the pass now fails after
// opTimeout and the next comes within retryAfterFailure.
var opTimeout = 10 * time.Second

func getOne(ctx context.Context, kv jetstream.KeyValue, key string) (jetstream.KeyValueEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return kv.Get(ctx, key)
}

func putOne(ctx context.Context, kv jetstream.KeyValue, key string, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := kv.Put(ctx, key, b)
	return err
}

func deleteOne(ctx context.Context, kv jetstream.KeyValue, key string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return kv.Delete(ctx, key)
}

// retryAfterFailure is how soon RunRegistry tries again after a publish
// that failed, when that is sooner than its interval.
var retryAfterFailure = 5 * time.Second

// RunRegistry publishes Registry() to kv at once and then every interval
// (after a failure, again within retryAfterFailure), until ctx ends; a
// change another writer makes in between is put back within seconds
// (registry_drift.go).
func RunRegistry(ctx context.Context, kv jetstream.KeyValue, every time.Duration, log zerolog.Logger) {
	registryLoop{kv: kv, every: every, log: log}.run(ctx)
}

// kickGap is how soon after a pass a kick (a bucket deleted, the bus back)
// may start the next one: a burst of kicks makes one pass a second at most.
var kickGap = time.Second

// registryLoop is RunRegistry with the server's extras: stats counts its
// writes (nil: not counted); ensure, when set, makes the provisioner's
// buckets again where one is missing before every pass but the first (the
// server ensured them just before), so a bucket lost while the server runs
// (deleted, a JetStream store wiped) is there again at the next interval at
// the latest, and within retryAfterFailure of a pass that failed; a
// receive on kick starts a pass at once (no sooner than kickGap after the
// last one). purge, when set, purges old delete markers (purgeMarkers) at
// the end of the first pass that published and then of a pass at least
// purgeEvery after the last purge began (at every pass when purgeEvery is
// not longer than every); a purge that fails is said and tried again at
// the next one due, not sooner, as it may be long.
type registryLoop struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream // the purge looks' (purgeWatch); nil: the bucket's count alone
	every  time.Duration
	log    zerolog.Logger
	stats  *Stats
	ensure func(context.Context) error
	kick   <-chan struct{}

	purge      func(context.Context) (purged map[string]int, err error)
	purgeEvery time.Duration
}

func (r registryLoop) run(ctx context.Context) {
	log, kv := r.log, r.kv
	every := r.every
	if every <= 0 {
		every = time.Hour
	}
	var lastPurge time.Time // when the last purge began; zero: none yet
	var backoff driftBackoff
	want := registryBytes(Registry())
	for pass := 0; ; pass++ {
		wait := every
		last := time.Now()
		purge := r.purge != nil && (lastPurge.IsZero() || last.Sub(lastPurge) >= r.purgeEvery)
		// Watched from before the pass, so a change made while it runs
		// is seen too (its own writes hold the table: no change).
		w, stopWatch := watchDrift(ctx, kv, false)
		written, deleted, kicked, purgedAt, err := r.pass(ctx, pass > 0, purge)
		if !purgedAt.IsZero() {
			lastPurge = purgedAt
		}
		r.stats.published(written, deleted)
		if kicked {
			stopWatch()
		}
		switch {
		case ctx.Err() != nil:
			stopWatch()
			return
		case kicked:
			// A kick while the pass ran cut it short (a bucket deleted
			// under it, whose read would wait for it): another pass at once.
			log.Debug().Err(err).Str("bucket", kv.Bucket()).Msg("registry pass kicked: another at once")
		case err != nil:
			log.Error().Err(err).Str("bucket", kv.Bucket()).Msg("registry not published")
			wait = min(every, retryAfterFailure)
		case written > 0 || deleted > 0:
			log.Info().Str("bucket", kv.Bucket()).Int("written", written).Int("deleted", deleted).Msg("registry published")
		default:
			log.Debug().Str("bucket", kv.Bucket()).Msg("registry unchanged")
		}
		if !kicked {
			if w == nil {
				// The bucket was missing before the pass (it made it
				// again): watched from what it holds now on.
				w, stopWatch = watchDrift(ctx, kv, true)
			}
			pw := &purgeWatch{kv: kv, js: r.js, keys: slices.Sorted(maps.Keys(want)), kinds: len(want)}
			k, drift, done := waitNext(ctx, wait, r.kick, w, want, func() bool { return pw.purged(ctx) })
			stopWatch()
			if done {
				return
			}
			if drift != nil {
				delay := backoff.next(time.Now(), every)
				if drift.purged { // a purge, or markers compacted away: the pass says what it wrote
					log.Info().Str("bucket", kv.Bucket()).Dur("put_back_in", delay).
						Msg("registry bucket lost values without a delete (its stream purged?): publishing it again")
				} else {
					log.Warn().Str("bucket", kv.Bucket()).Str("key", drift.key).Bool("deleted", drift.deleted).Dur("put_back_in", delay).
						Msg("registry changed by another writer: the registry is compiled in the server, putting it back")
				}
				if _, done := sleep(ctx, delay, r.kick); done {
					return
				}
				continue
			}
			if !k {
				continue
			}
		}
		if gap := kickGap - time.Since(last); gap > 0 {
			if _, done := sleep(ctx, gap, nil); done {
				return
			}
		}
	}
}

// sleep waits d, or until kick (nil: never) says to go on; done says ctx
// ended.
func sleep(ctx context.Context, d time.Duration, kick <-chan struct{}) (kicked, done bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, true
	case <-t.C:
		return false, false
	case <-kick:
		return true, false
	}
}

// pass is one pass: the buckets ensured (when ensure), then the registry
// published, then (when purge, and the registry was published) the old
// delete markers purged; purgedAt says when that purge began (zero: none).
// A kick while it runs cancels it (kicked true). A purge's outcome is
// logged here: it is no failure of the pass.
func (r registryLoop) pass(ctx context.Context, ensure, purge bool) (written, deleted int, kicked bool, purgedAt time.Time, err error) {
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done, watched := make(chan struct{}), make(chan bool, 1)
	go func() {
		select {
		case <-r.kick: // nil without kicks: waits for done alone
			cancel()
			watched <- true
		case <-done:
			watched <- false
		}
	}()
	pctx, pcancel := context.WithTimeout(kctx, time.Minute)
	if r.ensure != nil && ensure {
		ectx, ecancel := context.WithTimeout(pctx, 3*opTimeout) // a few calls a bucket, each bounded so
		err = r.ensure(ectx)
		ecancel()
	}
	if err == nil {
		written, deleted, err = PublishRegistry(pctx, r.kv, Registry())
	}
	pcancel()
	if err == nil && purge {
		purgedAt = time.Now()
		r.purgeMarkers(kctx)
	}
	close(done)
	return written, deleted, <-watched, purgedAt, err
}

// purgeMarkers runs r.purge within purgeTimeout and says what it did.
func (r registryLoop) purgeMarkers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	start := time.Now()
	purged, err := r.purge(ctx)
	d := zerolog.Dict()
	total := 0
	for b, n := range purged {
		d.Int(b, n)
		total += n
	}
	var ev *zerolog.Event
	msg := "old delete markers purged"
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		ev, msg = r.log.Debug().Err(err), "purge of old delete markers cut short" // a kick, or the server stopping
	case err != nil:
		ev, msg = r.log.Warn().Err(err), "old delete markers not all purged"
	case total > 0:
		ev = r.log.Info()
	default:
		ev = r.log.Debug()
	}
	ev.Dict("purged", d).Int("total", total).Dur("took", time.Since(start)).Msg(msg)
}

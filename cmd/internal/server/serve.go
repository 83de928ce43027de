package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// metricsMux serves reg at /metrics.
func metricsMux(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// Config is what Run needs.
type Config struct {
	NATSURL       string        // the bus, e.g. nats://127.0.0.1:4222
	Creds         string        // a NATS credentials file; empty: none
	RegistryEvery time.Duration // how often the registry is published again (default 1h)
	Replicas      int           // replicas of buckets the server creates (default 1)
	Metrics       string        // where to serve Prometheus /metrics (host:port); empty: nowhere
	Log           zerolog.Logger

	// MarkersKeptFor is how old a delete marker of the needs, applied and
	// collect buckets must be before the server purges it (default
	// DefaultMarkersKeptFor); PurgeEvery is how often at most it looks for
	// them, at a registry pass (default DefaultPurgeEvery). No flag sets
	// them: the defaults suit every mesh, tests shorten them.
	MarkersKeptFor time.Duration
	PurgeEvery     time.Duration
}

// drainTimeout bounds how long Run waits for the connection to drain.
const drainTimeout = 10 * time.Second

// Run is the provisioner server: it connects to the bus (reconnecting
// forever, with backoff), creates the provisioner's buckets where absent
// (at start, and again whenever one is lost while it runs: at once when
// JetStream announces its deletion or the bus comes back, else at the
// registry's next pass), publishes the registry at start and every
// cfg.RegistryEvery, and answers the verb until ctx ends; then it stops
// answering and drains the connection. At its first registry pass and then
// at most every cfg.PurgeEvery it purges the delete markers the clients
// left in the needs, applied and collect buckets that are older than
// cfg.MarkersKeptFor (see DefaultMarkersKeptFor). With cfg.Metrics it serves
// /metrics there (SPEC §6.3); an address it cannot listen on is an error
// at once. It returns nil after a clean stop.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Log
	if cfg.RegistryEvery <= 0 {
		cfg.RegistryEvery = time.Hour
	}
	if cfg.MarkersKeptFor <= 0 {
		cfg.MarkersKeptFor = DefaultMarkersKeptFor
	}
	if cfg.PurgeEvery <= 0 {
		cfg.PurgeEvery = DefaultPurgeEvery
	}
	var metricsLn net.Listener
	if cfg.Metrics != "" {
		var err error
		if metricsLn, err = net.Listen("tcp", cfg.Metrics); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		defer metricsLn.Close()
	}
	closed := make(chan struct{})
	// kick asks the registry writer for a pass at once, which first makes
	// any of the four buckets that is missing: sent when JetStream says one
	// was deleted and when the bus comes back (its store may be new).
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	opts := []nats.Option{
		nats.Name("mesh-provisioner"),
		nats.CustomInboxPrefix("_INBOX.mesh-provisioner"), // the example permissions give each user its own inbox
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil {
				return // a deliberate close, on shutdown
			}
			log.Warn().Err(err).Msg("bus disconnected")
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("bus connected")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("url", nc.ConnectedUrlRedacted()).Msg("bus reconnected")
			poke()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Error().Err(err).Msg("bus error")
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
	}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	log.Info().Msg("provisioner server starting")
	nc, err := nats.Connect(cfg.NATSURL, opts...)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.NATSURL, err)
	}
	shutdown := func() {
		if err := nc.Drain(); err != nil {
			nc.Close()
		}
		select {
		case <-closed:
		case <-time.After(drainTimeout):
			nc.Close()
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		shutdown()
		return fmt.Errorf("opening JetStream on %s: %w", cfg.NATSURL, err)
	}

	if err := ensureUntilDone(ctx, js, cfg.Replicas, log); err != nil {
		shutdown()
		return nil // ctx ended before the buckets were there: a clean stop
	}
	kv, err := js.KeyValue(ctx, spec.RegistryBucket)
	if err != nil {
		shutdown()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("opening bucket %s: %w", spec.RegistryBucket, err)
	}

	// The registry writer and /metrics run until ctx ends, or until the
	// verb could not be served.
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	sweeps := newSweepCache(js)
	var stats *Stats
	var wg sync.WaitGroup
	if metricsLn != nil {
		var reg *prometheus.Registry
		reg, stats = newMetrics(sweeps, log)
		srv := &http.Server{Handler: metricsMux(reg), ReadHeaderTimeout: 10 * time.Second}
		wg.Go(func() {
			if err := srv.Serve(metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error().Err(err).Msg("metrics server stopped")
			}
		})
		wg.Go(func() {
			<-wctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
		log.Info().Str("addr", metricsLn.Addr().String()).Msg("serving /metrics")
	}
	for _, b := range Buckets {
		// A refused subscription (a configuration made before the right was
		// granted) is said by the error handler; the registry's interval
		// still makes the bucket again.
		subj := spec.BucketDeletedAdvisory(b)
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {
			log.Warn().Str("bucket", b).Msg("provisioner bucket deleted; making it again")
			poke()
		}); err != nil {
			log.Warn().Err(err).Str("subject", subj).Msg("not watching for the bucket's deletion")
		}
	}
	ensure := func(ctx context.Context) error {
		created, err := ensureBuckets(ctx, js, cfg.Replicas)
		for _, b := range created {
			log.Warn().Str("bucket", b).Msg("provisioner bucket was missing: made again")
		}
		return err
	}
	purge := func(ctx context.Context) (map[string]int, error) {
		return purgeMarkers(ctx, js, cfg.MarkersKeptFor, time.Now())
	}
	reg := registryLoop{kv: kv, every: cfg.RegistryEvery, log: log, stats: stats, ensure: ensure, kick: kick,
		purge: purge, purgeEvery: cfg.PurgeEvery}
	wg.Go(func() { reg.run(wctx) })
	stop, err := serveQueryWith(ctx, nc, js, log, sweeps, stats)
	if err != nil {
		stopWork()
		wg.Wait()
		shutdown()
		return err
	}
	log.Info().Str("subject", spec.QuerySubject).Dur("registry_every", cfg.RegistryEvery).Msg("provisioner server serving")
	<-ctx.Done()
	stop()
	wg.Wait()
	shutdown()
	log.Info().Msg("provisioner server stopped")
	return nil
}

// ensureUntilDone runs EnsureBuckets until it succeeds or ctx ends, trying
// again with backoff (the bus may not be there yet).
func ensureUntilDone(ctx context.Context, js jetstream.JetStream, replicas int, log zerolog.Logger) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := EnsureBuckets(actx, js, replicas)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := reconnectDelay(attempt + 1)
		log.Warn().Err(err).Dur("retry_in", wait).Msg("provisioner buckets not ensured")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// reconnectDelay is the backoff: 250 ms doubling to 30 s.
func reconnectDelay(attempts int) time.Duration {
	d := 250 * time.Millisecond
	for i := 1; i < attempts && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

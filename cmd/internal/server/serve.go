package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// BusName is the server's connection name: it takes its replies on
// bus.InboxPrefix(BusName), _INBOX.mesh-provisioner, as its rights say
// (nodes/spec RightsOf), so serve checks its creds against that at start.
const BusName = "mesh-provisioner"

// Config is what Run needs.
type Config struct {
	NATSURL       string        // the bus, e.g. nats://127.0.0.1:4222
	Creds         string        // a NATS credentials file; empty: none
	User          string        // a NATS user of a password (examples/nats/server.conf's); empty: none
	Password      string        // User's password; never logged
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

// Run is the provisioner server: it connects to the bus (inputs/bus:
// reconnecting forever, with backoff; a bus not reachable yet is said, with
// its URL, and waited for), creates the provisioner's buckets where absent
// (at start, and again whenever one is lost while it runs: at once when
// JetStream announces its deletion or the bus comes back, else at the
// registry's next pass), publishes the registry at start and every
// cfg.RegistryEvery (and puts back within seconds a key another writer
// changed, deleted or added: registry_drift.go), and answers the verb until ctx ends; then it stops
// answering and drains the connection. At its first registry pass and then
// at most every cfg.PurgeEvery it purges the delete markers the clients
// left in the needs, applied and collect buckets that are older than
// cfg.MarkersKeptFor (see DefaultMarkersKeptFor). With cfg.Metrics it serves
// /metrics there (SPEC §6.3), 503 saying why until the buckets are there;
// an address it cannot listen on is an error at once. It returns nil after
// a clean stop, and an error naming the bus's last one when the connection
// is closed for good (nats.go gives up on a bus that refuses the user
// twice, e.g. "authorization violation"): nothing reconnects it, so the
// process should exit and its supervisor start it again.
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
	// busCtx ends with ctx, or when the connection is closed for good
	// (its cause then says why); closed is closed then too.
	busCtx, busGone := context.WithCancelCause(ctx)
	defer busGone(nil)
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
	log.Info().Msg("provisioner server starting")
	nc, err := bus.Connect(bus.Options{
		URL:         cfg.NATSURL,
		Creds:       cfg.Creds,
		User:        cfg.User,
		Password:    cfg.Password,
		Name:        BusName, // inbox _INBOX.mesh-provisioner: the example permissions give each user its own
		Log:         log,
		OnReconnect: poke, // inputs/bus says it came back
		OnClosed: func(err error) {
			busGone(busClosed(err))
			close(closed)
		},
	})
	if err != nil {
		return err
	}
	if nc.IsConnected() {
		log.Info().Str("url", bus.ConnectedURL(nc)).Msg("bus connected")
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
	// stopped is what Run returns once busCtx ended: nil when ctx did.
	stopped := func() error {
		if ctx.Err() != nil {
			return nil
		}
		return context.Cause(busCtx)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		shutdown()
		return fmt.Errorf("opening JetStream on %s: %w", bus.ConnectedURL(nc), err)
	}
	var gate *metricsGate
	if metricsLn != nil {
		gate = serveMetrics(metricsLn, nc, log)
		defer gate.stop()
	}

	if err := ensureUntilDone(busCtx, js, nc, cfg.Replicas, log); err != nil {
		shutdown()
		return stopped() // nil: ctx ended before the buckets were there
	}
	kv, err := js.KeyValue(busCtx, spec.RegistryBucket)
	if err != nil {
		shutdown()
		if busCtx.Err() != nil {
			return stopped()
		}
		return fmt.Errorf("opening bucket %s: %w", spec.RegistryBucket, err)
	}

	// The registry writer runs until ctx ends, or until the verb could not
	// be served or the bus is gone.
	wctx, stopWork := context.WithCancel(busCtx)
	defer stopWork()
	sweeps := newSweepCache(js)
	var stats *Stats
	var wg sync.WaitGroup
	if gate != nil {
		var reg *prometheus.Registry
		reg, stats = newMetrics(sweeps, log)
		gate.open(metricsMux(reg))
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
	reg := registryLoop{kv: kv, js: js, every: cfg.RegistryEvery, log: log, stats: stats, ensure: ensure, kick: kick,
		purge: purge, purgeEvery: cfg.PurgeEvery}
	wg.Go(func() { reg.run(wctx) })
	stop, err := serveQueryWith(busCtx, nc, js, log, sweeps, stats)
	if err != nil {
		stopWork()
		wg.Wait()
		shutdown()
		return err
	}
	log.Info().Str("subject", spec.QuerySubject).Dur("registry_every", cfg.RegistryEvery).Msg("provisioner server serving")
	<-busCtx.Done()
	stop()
	wg.Wait()
	shutdown()
	if err := stopped(); err != nil {
		return err
	}
	log.Info().Msg("provisioner server stopped")
	return nil
}

// busClosed is the cause busCtx ends with when the connection is closed
// for good, err being its last error.
func busClosed(err error) error {
	if err == nil {
		return errors.New("bus connection closed")
	}
	return fmt.Errorf("bus connection closed: %w", err)
}

// ensureUntilDone runs EnsureBuckets until it succeeds or ctx ends, trying
// again with backoff (the bus may not be there yet, which each warning
// says).
func ensureUntilDone(ctx context.Context, js jetstream.JetStream, nc *nats.Conn, replicas int, log zerolog.Logger) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := EnsureBuckets(actx, js, replicas)
		if err == nil {
			warnFewerReplicas(actx, js, replicas, log)
			cancel()
			return nil
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := reconnectDelay(attempt + 1)
		ev := log.Warn().Err(err).Dur("retry_in", wait)
		if !nc.IsConnected() {
			ev = ev.Str("bus", "not reachable yet")
		}
		ev.Msg("provisioner buckets not ensured")
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

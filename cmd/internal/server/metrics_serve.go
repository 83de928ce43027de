package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/outputs/control"
)

// metricsMux serves reg at /metrics.
func metricsMux(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// metricsGate is the /metrics server from the start: until open is given
// the real handler it answers every request 503 saying why (the bus not
// reachable yet, or the buckets not there yet), so a scrape is never left
// hanging on a listener nobody serves, and a dashboard says the server is
// down rather than nothing.
type metricsGate struct {
	nc   *nats.Conn
	h    atomic.Pointer[http.Handler]
	srv  *http.Server
	done chan struct{}
}

// serveMetrics serves ln at once, 503 until open. What net/http says of
// its connections (an accept error, a handler's panic) is a warning of
// log, component "metrics", not plain text on stderr.
func serveMetrics(ln net.Listener, nc *nats.Conn, log zerolog.Logger) *metricsGate {
	g := &metricsGate{nc: nc, done: make(chan struct{})}
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, ErrorLog: control.ErrorLogOf(log, "metrics")}
	go func() {
		defer close(g.done)
		if err := g.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics server stopped")
		}
	}()
	log.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics")
	return g
}

// ServeHTTP is h once open, else 503 with why.
func (g *metricsGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := g.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	why := "mesh-provisioner not ready: its buckets are not ensured yet\n"
	if !g.nc.IsConnected() {
		why = "mesh-provisioner not ready: the bus is not reachable yet\n"
	}
	http.Error(w, why, http.StatusServiceUnavailable)
}

// open serves h from now on.
func (g *metricsGate) open(h http.Handler) { g.h.Store(&h) }

// stop ends the server, letting requests in flight finish (up to 5 s).
func (g *metricsGate) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
	<-g.done
}

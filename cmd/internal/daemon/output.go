package daemon

import (
	"context"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/cmd/internal/quietconn"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// newStage wires the output stage: the fill socket, the publisher on nc,
// and the metrics of the fills.
func (d *Daemon) newStage(nc *nats.Conn) (*stage.Stage, error) {
	pub := &report.Publisher{NC: nc, JS: d.js, Node: d.cfg.Node,
		// A lookup the bus refuses ends at once, not at its timeout.
		Lookup: func(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
			return bus.LookupKVSoon(ctx, d.js, bucket)
		},
		// And so does a read of its keys (the start's Sweep).
		Hear: func(ctx context.Context, bucket string, call func(context.Context) error) error {
			return bus.HearKV(ctx, d.js, bucket, call)
		},
		// Not through a member of the stream still catching up (nor
		// waiting for one that crashed where nc was connected).
		Caught: func(ctx context.Context, kv jetstream.KeyValue, wait time.Duration) error {
			return bus.AwaitReplicasOn(ctx, nc, kv, wait)
		},
		Overwritten: d.overwritten}
	d.pub.Store(pub)
	secret, err := d.cfg.Bus.OwnSecret()
	if err != nil {
		d.log.Warn().Err(err).Msg("the bus secret could not be read again: secret files' report digests change at each start")
	}
	return stage.New(stage.Config{
		Node:      d.cfg.Node,
		BusSecret: secret, // the reports' key (stage.ReportKey)
		Fill:      &fill.Client{Socket: d.cfg.FillSocket, Timeout: d.cfg.FillTimeout, Wrap: quietconn.Wrap},
		Pub:       pub,
		// The node-engine's error text is not said when it quotes a
		// secret (a program's last words): called on the loop, as the
		// mesh is used.
		QuotesSecret: func(text string) bool { return d.mesh.QuotesSecret(text) },
		FillGap:      d.cfg.FillGap,
		Log:          d.log,
		Busy:         func() bool { return len(d.updates)+len(d.events)+len(d.asker.Answers())+len(d.fetcher.Fetched()) > 0 },
		Awaiting:     func() bool { return d.asker.Asking() || d.fetcher.Fetching() },
		OnFill: func(took time.Duration, err error) {
			d.metrics.Filled(took, err)
			d.fillHealth.Heard(err)
		},
		OnFillSent: d.fillHealth.Sent,
		OnState:    d.metrics.ModuleState,
		Removals:   filepath.Join(d.cfg.StateDir, "removals.json"),
		// The bindings of plans that do not parse, for the next start
		// (nodes/keptplans.go).
		KeptPlans: filepath.Join(d.cfg.StateDir, "kept-plans.json"),
		Retry:     d.cfg.Recheck, // a refused request waits from a tick, doubling (outputs/stage/refused.go)
		// A module held for a provider bucket not read yet is sent
		// nothing by the stage on its own either (outputs/stage/daemonhold.go).
		Held: func(module string) bool { return d.mesh.HoldsUnread(module) },
	})
}

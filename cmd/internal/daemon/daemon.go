package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/quietconn"
	"github.com/novox/mesh-provisioner/inputs/archive"
	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/vault"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/ask"
	"github.com/novox/mesh-provisioner/outputs/control"
	"github.com/novox/mesh-provisioner/outputs/dirlock"
	"github.com/novox/mesh-provisioner/outputs/report"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// Daemon is one node's client.
type Daemon struct {
	cfg      Config
	log      zerolog.Logger
	stateDir *dirlock.Held // taken for Run (statedir.go)
	// shapeWarns bounds the warnings of keys ignored, by bucket (watch.go).
	shapeWarns bus.WarnLimits

	nc     *nats.Conn
	inputs              // what the loop reads from
	out    *stage.Stage // fills, needs, items and reports

	events chan event
	// closed gets the last error once the connection is closed for good:
	// Run then returns, unless it is stopping (it closed it itself).
	closed chan error

	// Owned by the loop goroutine.
	mesh      *nodes.NodeGraph
	startedAt time.Time
	// baseLoadedAt: when the base buckets were first read (firstLooks).
	baseLoadedAt time.Time
	// sweepAgain: the bus came back while the first fill waits for the
	// last run's keys to be read back (stage.ReadingBack).
	sweepAgain bool
	calls      []call // Do's calls of this batch, run once it is stabilized
	ticking    bool   // the retry tick is armed (it sleeps at rest: loop.go)

	// assignmentsNeverRead says why the assignments bucket was not read
	// yet, while it never was (missing or refused: held.go); prov.ask says it.
	assignmentsNeverRead string

	status
	metrics    *control.ClientMetrics
	fillHealth *control.FillHealth // whether the fill socket answers (healthz)
	// pub is the stage's publisher once made: the bus's refusals of its
	// puts go to it (report.Publisher.Refused).
	pub atomic.Pointer[report.Publisher]
}

// inputs are the loop's sources besides its events: the buckets watched,
// the vault asker and the archive fetcher, which ask again on their own.
type inputs struct {
	js      jetstream.JetStream
	watches map[string]*watchState // by bucket; owned by the loop
	updates chan bus.Update        // every watch's
	asker   *vault.Asker
	fetcher *archive.Fetcher
}

// status is what /healthz says, written by the bus callbacks and the loop.
type status struct {
	connected atomic.Bool // the bus connection is up
	ready     atomic.Bool // the initial load of the base buckets is done
	settled   bool        // Config.OnSettled was called
	// unread says why the assignments bucket cannot be read (nil: it was
	// read; held.go).
	unread atomic.Pointer[string]
	// inbox says whether the bus lets this client's user hear the node's
	// replies: asked at start and each time the bus comes back (a user of
	// another node connects fine and has every request go unanswered).
	inbox bus.InboxCheck
	// overwritten hears of this node's reports written by someone else
	// (a second client for the node: outputs/report/overwritten.go).
	overwritten *report.Overwritten
	loopEnded   chan struct{} // closed once the loop has returned (DoHeld)
}

// New makes a daemon; Run starts it.
func New(cfg Config) (*Daemon, error) {
	cfg.defaults()
	if cfg.Node == "" {
		return nil, fmt.Errorf("no --node given")
	}
	// The node is a token of every key and subject it writes and a part of
	// vault names: bounded and '/'-free as every other name (nodes/spec).
	if msg := spec.CheckNameLen("--node", cfg.Node); msg != "" {
		return nil, fmt.Errorf("%s", msg)
	}
	if msg := spec.CheckUTF8(cfg.Node); msg != "" {
		return nil, fmt.Errorf("--node %q %s", cfg.Node, msg)
	}
	if msg := spec.CheckVaultPart(cfg.Node); msg != "" {
		return nil, fmt.Errorf("--node %q %s", cfg.Node, msg)
	}
	if cfg.Control != "" {
		if err := control.CheckSocketPath(cfg.Control); err != nil {
			return nil, err
		}
	}
	d := &Daemon{
		shapeWarns: bus.WarnLimits{Burst: 10, Every: time.Minute},
		cfg:        cfg, log: cfg.Log.With().Str("node", cfg.Node).Logger(),
		events: make(chan event, 1024), closed: make(chan error, 1),
		mesh: nodes.NewNodeGraph(cfg.Node), inputs: inputs{watches: map[string]*watchState{}, updates: make(chan bus.Update, 1024)},
		metrics: control.NewClientMetrics(vault.OutcomeNames()), fillHealth: &control.FillHealth{Socket: cfg.FillSocket, HangAfter: cfg.FillHang},
	}
	d.overwritten = &report.Overwritten{Node: cfg.Node, Log: d.log}
	d.loopEnded = make(chan struct{})
	c := d.mesh.Counters()
	d.metrics.Engine(func() (uint64, uint64, uint64, uint64) {
		return c.Stabilizations.Load(), c.Recomputed.Load(), c.Changed.Load(), c.Cutoffs.Load()
	})
	d.metrics.Renders(d.mesh.Renders())
	d.metrics.State(d.connected.Load, d.Do, d.notReady, d.fillHealth.Unhealthy)
	return d, nil
}

// Run connects, loads every input, fills, and keeps the files current until
// ctx ends; then it cancels the fills in flight and drains the connection.
// It first takes the state directory (statedir.go), held until it returns:
// one it cannot use or another client holds ends it at once, with a
// *StartError.
func (d *Daemon) Run(ctx context.Context) error {
	held, err := lockStateDir(d.cfg.StateDir, d.cfg.Node)
	if err != nil {
		return err
	}
	defer held.Release()
	d.stateDir = held
	start := d.log.Info().Str("fill_socket", d.cfg.FillSocket).Str("state_dir", d.cfg.StateDir)
	if tok := spec.EncodeToken(d.cfg.Node); tok != d.cfg.Node {
		start = start.Str("node_token", tok) // SPEC §2.1: what its keys and subjects hold
	}
	start.Msg("starting")
	if named, ok := spec.GivenEncoded(d.cfg.Node); ok {
		d.log.Warn().Msgf("--node %q reads as the key token of the node %q: a name is given as it is, so this node's keys are %s.<module>, not %s.<module>; give --node %q for that node",
			d.cfg.Node, named, spec.EncodeToken(d.cfg.Node), d.cfg.Node, named)
	}
	keys, err := vault.NewKeys()
	if err != nil {
		return err
	}
	o := d.cfg.Bus
	o.Name = BusName(d.cfg.Node)
	o.Log = d.log
	o.Wrap = quietconn.Wrap
	o.OnReconnect = func() {
		d.connected.Store(true)
		d.metrics.Reconnected()
		d.send(ctx, reconnected{})
	}
	o.OnDisconnect = func(error) { d.connected.Store(false) }
	o.OnRefused = func(subject string) {
		if p := d.pub.Load(); p != nil {
			p.Refused(subject)
		}
	}
	o.OnClosed = func(err error) {
		d.connected.Store(false)
		select {
		case d.closed <- err:
		default:
		}
	}
	nc, err := bus.Connect(o)
	if err != nil {
		return err
	}
	defer bus.Drain(nc)
	d.nc = nc
	d.connected.Store(nc.IsConnected())
	d.inbox.User, d.inbox.Inbox, d.inbox.Log = d.cfg.Bus.User, bus.InboxPrefix(o.Name), d.log
	go d.inbox.Check(nc)
	// An item whose record the bus cannot hold fails (nodes/itemrecord.go).
	d.mesh.SetItemRecordLimit(nc.MaxPayload)
	if d.js, err = jetstream.New(nc); err != nil {
		return err
	}
	retry := backoff.Doubling{Min: d.cfg.BackoffMin, Max: d.cfg.BackoffMax}
	vc := &vault.Client{NC: nc, Node: d.cfg.Node, Keys: keys, Timeout: d.cfg.VaultTimeout, Log: d.log}
	d.asker = vault.NewAsker(ctx, vc, retry, d.cfg.RefusedRetry)
	store := &archive.Store{Dir: d.cfg.StateDir, JS: d.js, Root: d.cfg.TemplatesRoot, CacheFailed: func(err error) {
		d.log.Warn().Err(err).Msg("templates archive not kept in the state dir; used from memory")
	}, CacheDamaged: func(err error) {
		d.log.Warn().Err(err).Msg("templates archive's cache file in the state dir is damaged; fetching it again")
	}}
	d.fetcher = archive.NewFetcher(ctx, store, retry)
	d.fetcher.Timeout = d.cfg.FetchTimeout
	d.fetcher.Recheck = d.cfg.Recheck
	if d.out, err = d.newStage(nc); err != nil {
		return err
	}
	defer d.out.Stop() // fills in flight are cut off: the next start sends everything
	// Before the assignments are read: a consumer whose plan does not parse
	// binds as the last run kept it (nodes/keptplans.go).
	d.mesh.PlansBefore(d.out.KeptPlansBefore())
	d.startedAt = time.Now()

	sub, err := vault.WatchChanged(nc, d.log, func(name string) { d.send(ctx, secretChanged{name}) })
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	stopAsk, err := ask.Serve(ctx, nc, d.cfg.Node, d.lookupConfig)
	if err != nil {
		return err
	}
	defer stopAsk()
	if d.cfg.Control != "" {
		stop, err := d.serveControl()
		if err != nil {
			return err
		}
		defer stop()
	}
	enc := spec.EncodeToken(d.cfg.Node)
	d.watch(ctx, spec.AssignmentsBucket, ">")
	d.watch(ctx, spec.RegistryBucket, ">")
	d.watch(ctx, spec.ConfigBucket, enc+".>")
	defer close(d.loopEnded) // before the control socket's stop, which waits for DoHeld's callers
	return d.loop(ctx)
}

// send hands an event to the loop (or drops it when ctx has ended).
func (d *Daemon) send(ctx context.Context, ev event) {
	select {
	case d.events <- ev:
	case <-ctx.Done():
	}
}

type reconnected struct{}
type secretChanged struct{ name string }

// call runs fn in the loop goroutine (where the graph may be read) and
// waits for it.
type call struct {
	ctx  context.Context // its caller's: a call whose caller has gone is not run
	fn   func()
	done chan struct{}
}

// Do runs fn in the loop goroutine and waits; for the control socket and
// prov.ask, which read the graph.
func (d *Daemon) Do(ctx context.Context, fn func(m *nodes.NodeGraph)) error {
	return d.do(ctx, fn, false)
}

// DoHeld is Do for the control socket: when ctx ends with the call
// queued or running, it still returns only once the loop is done with it
// (a call whose caller has gone is not run when the loop comes to it), so
// the socket sends the loop no other call meanwhile (outputs/control
// oneAtATime: drawings given up on at once were drawn one after another).
func (d *Daemon) DoHeld(ctx context.Context, fn func(m *nodes.NodeGraph)) error {
	return d.do(ctx, fn, true)
}

func (d *Daemon) do(ctx context.Context, fn func(m *nodes.NodeGraph), held bool) error {
	c := call{ctx: ctx, fn: func() { fn(d.mesh) }, done: make(chan struct{})}
	select {
	case d.events <- c:
	case <-ctx.Done():
		return ctx.Err()
	}
	gone := ctx.Done()
	if held {
		gone = nil // waited for the loop, which is done with the call or has ended
	}
	select {
	case <-c.done:
		if !held {
			return nil
		}
		return ctx.Err() // nil unless it ended meanwhile; an answer made then is its caller's
	case <-d.loopEnded:
		return errStopped
	case <-gone:
		return ctx.Err()
	}
}

// errStopped is a call the loop, which has returned, will not run.
var errStopped = errors.New("the daemon is stopping")

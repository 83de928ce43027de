package daemon

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/archive"
	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// BusName is the client's connection name on the bus, whose inbox
// (_INBOX.provisioner.<node>, spec.ClientInbox) its user's rights let it hear.
func BusName(node string) string { return spec.ClientBusName(node) }

// Config is what `mesh-provisioner-client run` is given.
type Config struct {
	Node       string
	Bus        bus.Options // URL and credentials; Name and callbacks are set by the daemon
	FillSocket string
	StateDir   string        // templates archives by digest; removals.json: removals the node-engine has not answered; kept-plans.json: the bindings of plans that do not parse; lock: held by the client running on it (statedir.go)
	Control    string        // control socket path; empty: none
	Refill     time.Duration // every filled file sent again (default 1m)
	// FillGap: a module is filled at most once per FillGap; its changes
	// that come faster are held and go out together in its next fill, so
	// a flapping value restarts its program at most once per gap however
	// fast this machine is (default 5ms; negative: no gap).
	FillGap time.Duration

	VaultTimeout time.Duration // no reply within it: silent (default 5s)
	RefusedRetry time.Duration // a refused secret asked again after it (default 10m)
	BackoffMin   time.Duration // absent/silent asked again after it, doubling (default 1s)
	BackoffMax   time.Duration // … up to it (default 1m)
	Recheck      time.Duration // a missing bucket looked for again (default 5s)
	FetchTimeout time.Duration // one try of a templates archive fetch (default 30s)
	// FillTimeout: a fill request not answered within it fails its module
	// "not answering" (default fill.DefaultTimeout, 5 min: longer than
	// mesh-fill may take to run a slow restart).
	FillTimeout time.Duration
	// FillHang: fill requests out this long with no answer from the fill
	// socket meanwhile say the client unhealthy on /healthz before they
	// time out (default control.DefaultFillHang, 2 min).
	FillHang time.Duration
	// TemplatesRoot, when set, is the directory file:// templates refs must
	// lie below (archive.Store.Root); empty: anywhere the daemon can read.
	TemplatesRoot string
	// ReaskSpread: when the bus comes back every vault name held or waited
	// for is asked again, each at a random moment within it (default 5s).
	ReaskSpread time.Duration

	// OnSettled, when set, is called once, on the daemon's loop, the
	// first time after the initial load that nothing is on its way: no
	// output pending (a fill request in flight or held, needs not written
	// yet), no vault ask or first fetch of a templates archive
	// unanswered. The cold start's fills have been answered and its needs
	// written then (the fills of modules still waiting for a value are
	// not, nor will be).
	OnSettled func()

	Log zerolog.Logger
}

func (c *Config) defaults() {
	if c.FillSocket == "" {
		c.FillSocket = "/run/nox-mesh-host/fill.sock"
	}
	if c.StateDir == "" {
		c.StateDir = "/var/lib/mesh-provisioner-client"
	}
	if c.Refill == 0 {
		c.Refill = time.Minute
	}
	if c.FillGap == 0 {
		c.FillGap = DefaultFillGap
	}
	if c.VaultTimeout == 0 {
		c.VaultTimeout = 5 * time.Second
	}
	if c.RefusedRetry == 0 {
		c.RefusedRetry = 10 * time.Minute
	}
	if c.BackoffMin == 0 {
		c.BackoffMin = time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = time.Minute
	}
	if c.Recheck == 0 {
		c.Recheck = 5 * time.Second
	}
	if c.ReaskSpread == 0 {
		c.ReaskSpread = 5 * time.Second
	}
}

// DefaultFillGap is Config.FillGap's default: short enough that a change
// to a module at rest is never held, long enough to bound a flapping
// module's fills (and program restarts) to 200 a second.
const DefaultFillGap = 5 * time.Millisecond

// DefaultFetchTimeout is Config.FetchTimeout's default: a templates archive
// source that has not answered within it is reported and tried again.
const DefaultFetchTimeout = archive.DefaultTimeout

package bus

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/backoff"
)

// Reconnect delays: the wait after every server of the list was tried once
// starts at reconnectMin and doubles up to reconnectMax, with jitter.
const (
	reconnectMin = 100 * time.Millisecond
	reconnectMax = 5 * time.Second
)

// Options says how to reach the bus. At most one of Creds, User/Password and
// NKeySeedFile is expected; Password never reaches a log line.
type Options struct {
	URL          string // nats://host:port, or a comma-separated list
	Creds        string // path to a .creds file (JWT + nkey seed)
	User         string
	Password     string
	NKeySeedFile string // path to an nkey seed file
	Name         string // the connection's name, e.g. provisioner.ace; also the inbox prefix _INBOX.<Name>

	Log zerolog.Logger

	// OnReconnect is called each time the connection comes back, and on a
	// first connect that came late (the bus was not up when Connect was
	// called): the moment to Resync every Watch.
	OnReconnect func()
	// OnDisconnect is called when the connection drops (err nil on a
	// deliberate close).
	OnDisconnect func(error)
	// OnRefused is called with the subject of each publish the bus
	// refuses this connection (a permission violation, reported on the
	// connection and not to the publish: a JetStream put then has no ack).
	OnRefused func(subject string)
	// OnClosed is called once the connection is closed for good: by Close
	// or Drain, or by nats.go giving up on it (e.g. after the server said
	// "maximum control line exceeded"); err is the last error, nil when
	// there was none. A daemon that did not close it should stop: nothing
	// reconnects a closed connection.
	OnClosed func(err error)
	// Wrap, when set, is given each new connection to the bus (a TCP
	// connection, before any TLS) and returns the one nats.go uses: the
	// daemon's reads and writes it with raw system calls (quietconn).
	Wrap func(net.Conn) net.Conn
}

// wrapDialer dials with nats.go's default connect timeout and hands the
// connection to Options.Wrap. Unlike nats.go's own dialer it does not
// divide that timeout among the addresses one host name resolves to: each
// address gets all of it.
type wrapDialer struct{ wrap func(net.Conn) net.Conn }

func (w wrapDialer) Dial(network, address string) (net.Conn, error) {
	d := net.Dialer{Timeout: nats.GetDefaultOptions().Timeout}
	c, err := d.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return w.wrap(c), nil
}

// PingInterval is how often a connection pings the bus: two pings
// unanswered say the connection stale, and it reconnects.
var PingInterval = 30 * time.Second

// Connect opens a connection that never gives up: it reconnects forever with
// backoff, and a bus that is not up yet is waited for in the background (the
// returned connection is then not yet connected; nats.go buffers what is
// published meanwhile). It fails only on options that cannot work.
func Connect(o Options) (*nats.Conn, error) {
	log := o.Log.With().Str("nats", o.Name).Logger()
	var late atomic.Bool // the first connect did not succeed at once
	var why firstTry

	opts := []nats.Option{
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		// A link that dies without a word (a half-open TCP connection: a
		// firewall's state dropped, a peer's host gone) is found by pings
		// alone: nats.go's defaults (every 2 min, two unanswered) left it
		// unnoticed for up to 6 min, /healthz saying connected and no
		// change reaching the node (an outside audit). One every 30 s, two
		// unanswered: found within 90 s, at a PING and its PONG each 30 s
		// at rest (docs/PERFORMANCE.md: idle).
		nats.PingInterval(PingInterval),
		nats.MaxPingsOutstanding(2),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(nc *nats.Conn) {
			why.connected()
			noteServer(nc) // which server, where: it may crash (crashed.go)
			if !late.Load() {
				return
			}
			log.Info().Str("url", ConnectedURL(nc)).Msg("connected to the bus")
			if o.OnReconnect != nil {
				o.OnReconnect()
			}
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn().Err(err).Msg("disconnected from the bus")
			} else {
				log.Info().Msg("disconnected from the bus")
			}
			if o.OnDisconnect != nil {
				o.OnDisconnect(err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			noteServer(nc)
			log.Info().Str("url", ConnectedURL(nc)).Msg("reconnected to the bus")
			if o.OnReconnect != nil {
				o.OnReconnect()
			}
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			ev := log.Info()
			if err := nc.LastError(); err != nil {
				ev = log.Warn().Err(err)
			}
			ev.Msg("connection to the bus closed")
			if o.OnClosed != nil {
				o.OnClosed(nc.LastError())
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
			if why.failed(err) {
				log.Warn().AnErr("last_error", err).Msg("the first try to reach the bus failed")
			}
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			asyncError(log, sub, err, nc.IsConnected())
			if subject, ok := RefusedPublish(err); ok && o.OnRefused != nil {
				o.OnRefused(subject)
			}
		}),
	}
	if o.Wrap != nil {
		opts = append(opts, nats.SetCustomDialer(wrapDialer{o.Wrap}))
	}
	if p := InboxPrefix(o.Name); p != "" {
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	switch {
	case o.Creds != "":
		warning, err := CheckCreds(o.Creds, time.Now(), InboxPrefix(o.Name))
		if err != nil {
			return nil, fmt.Errorf("bus: %w", err)
		}
		if warning != "" {
			log.Warn().Str("creds", o.Creds).Msg(warning)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	case o.NKeySeedFile != "":
		opt, err := nats.NkeyOptionFromSeed(o.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("bus: reading nkey seed file %s: %w", o.NKeySeedFile, err)
		}
		opts = append(opts, opt)
	}
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}

	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		// nats.go error texts carry no password; the URL may, so redact it.
		return nil, fmt.Errorf("bus: connecting to %s as %q: %w", RedactURL(o.URL), o.Name, err)
	}
	hearingOf(nc) // its refusals heard from the start, each by one call (refusals.go)
	noteServer(nc)
	if !nc.IsConnected() {
		late.Store(true)
		// Why, when the first try said: a bus that refused the user
		// ("authorization violation") is not one that is down.
		ev := log.Warn().Str("url", RedactURL(o.URL))
		if err := why.said(nc.LastError()); err != nil {
			ev = ev.AnErr("last_error", err)
		}
		ev.Msg("bus not reachable yet; connecting in the background")
	}
	return nc, nil
}

// reconnectDelay is the wait after the attempts-th pass over the server list
// (attempts starts at 1): 100 ms doubling to 5 s, with jitter.
func reconnectDelay(attempts int) time.Duration {
	return backoff.Jitter(backoff.Doubling{Min: reconnectMin, Max: reconnectMax}.Next(attempts - 1))
}

// InboxPrefix is the reply-subject prefix of a connection named name:
// _INBOX.<name>, each token of name kept to subject-safe characters ("" for
// an empty name, meaning the default _INBOX).
func InboxPrefix(name string) string {
	var toks []string
	for _, tok := range strings.Split(name, ".") {
		if tok == "" {
			continue
		}
		toks = append(toks, strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
				r == '-', r == '_', r == '/', r == '=':
				return r
			}
			return '_'
		}, tok))
	}
	if len(toks) == 0 {
		return ""
	}
	return "_INBOX." + strings.Join(toks, ".")
}

// ConnectedURL is the URL nc is connected to, for a log line: redacted
// as RedactURL does. nats.go's ConnectedUrlRedacted hides a password only,
// and a token is given in the URL as its user (nats://TOKEN@host).
func ConnectedURL(nc *nats.Conn) string { return RedactURL(nc.ConnectedUrl()) }

// RedactURL hides any user:password@ (or token@) in a (comma-separated)
// URL list. An entry without "://" is nats:// (as CheckURLs and nats.go
// read it) and may carry them too.
func RedactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		prefix, rest, ok := strings.Cut(p, "://")
		if ok {
			prefix += "://"
		} else {
			prefix, rest = "", p
		}
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			parts[i] = prefix + "[redacted]@" + rest[at+1:]
		}
	}
	return strings.Join(parts, ",")
}

// Drain lets what is in flight on nc finish and waits (up to 5s) for the
// connection to close: how a client stops.
func Drain(nc *nats.Conn) {
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	for deadline := time.Now().Add(5 * time.Second); !nc.IsClosed() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// asyncError says an error the bus's connection reports on its own (not
// to a call): an error, a permission violation a warning. A consumer gone
// (a watch's, deleted under it, or as it stops at the process's end) is a
// debug line: the watch that lost one says so itself and makes it again
// (watch.go), and at a stop it is no error (it was said as one once in
// two stops of the lab). A consumer's heartbeats missed while the
// connection is down (nats.go says it of a watch every few seconds until
// the bus is back) is a debug line too: the disconnect was said once, and
// the watch resumes with the bus; missed on a live connection it is a
// warning.
func asyncError(log zerolog.Logger, sub *nats.Subscription, err error, connected bool) {
	ev := log.Error()
	switch {
	case errors.Is(err, nats.ErrPermissionViolation):
		ev = log.Warn()
	case errors.Is(err, nats.ErrConsumerNotActive) && !connected:
		ev = log.Debug()
	case errors.Is(err, nats.ErrConsumerNotActive):
		ev = log.Warn()
	case errors.Is(err, nats.ErrConsumerNotFound), errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, nats.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerDeleted):
		ev = log.Debug()
	}
	if sub != nil {
		ev = ev.Str("subject", sub.Subject)
	}
	ev.Str("error", err.Error()).Msg("bus error")
}

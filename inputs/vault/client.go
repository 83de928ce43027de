package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Timings of the protocol (SPEC §4.2); its subjects are in package spec.
const (
	// DefaultTimeout is how long an ask waits for a reply.
	DefaultTimeout = 5 * time.Second
	// RefusedRetry is how long after a refusal a secret is asked again.
	RefusedRetry = 10 * time.Minute
)

// Reply statuses on the wire.
const (
	StatusSealed  = "sealed"
	StatusAbsent  = "absent"
	StatusRefused = "refused"
)

// Request is the vault request's JSON.
type Request struct {
	Secret    string `json:"secret"`
	Node      string `json:"node"`
	Module    string `json:"module"`
	PublicKey string `json:"public_key"`
	// Credential is the offer's credential form, sent for a provisions
	// entry's credential (provision/…) only (SPEC §4.2 r2).
	Credential string `json:"credential,omitempty"`
}

// Reply is the vault reply's JSON. Box is sealed to the request's key.
type Reply struct {
	Status string `json:"status"`
	Box    string `json:"box,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Outcome is what came of one ask.
type Outcome int

const (
	// Sealed: the vault sent the value, sealed to our key, and it opened.
	Sealed Outcome = iota
	// Absent: the vault does not hold the secret (yet); ask again with backoff.
	Absent
	// Refused: the vault will not give it; the module fails with Reason.
	Refused
	// Silent: no reply within Timeout, or no vault listening; ask again with backoff.
	Silent
	// Error: the ask or the reply went wrong (bad reply, box does not open,
	// context ended).
	Error
)

// Outcomes lists every Outcome, in order: a counter by outcome is shown
// at 0 for each before the first ask.
func Outcomes() []Outcome { return []Outcome{Sealed, Absent, Refused, Silent, Error} }

// OutcomeNames is Outcomes as their names, a metric's label values.
func OutcomeNames() []string {
	var names []string
	for _, o := range Outcomes() {
		names = append(names, o.String())
	}
	return names
}

func (o Outcome) String() string {
	switch o {
	case Sealed:
		return "sealed"
	case Absent:
		return "absent"
	case Refused:
		return "refused"
	case Silent:
		return "silent"
	case Error:
		return "error"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Result is one ask's outcome. Value is set only for Sealed; printing or
// marshalling a Result never shows it.
type Result struct {
	Outcome Outcome
	Value   []byte
	Reason  string
	// Replied says the vault replied (whatever it said, a reply out of
	// shape too): an Error without it is the ask's own failure.
	Replied bool
	// NoResponders says the bus answered at once that nothing listens
	// for asks (Silent): no vault at all, rather than a slow one.
	NoResponders bool
}

// String says the outcome and reason, never the value.
func (r Result) String() string {
	switch {
	case r.Outcome == Sealed:
		return "sealed (value redacted)"
	case r.Reason != "":
		return r.Outcome.String() + ": " + r.Reason
	}
	return r.Outcome.String()
}

// GoString keeps %#v from printing Value.
func (r Result) GoString() string { return r.String() }

// Format prints String for every verb, so no verb prints Value.
func (r Result) Format(f fmt.State, _ rune) { _, _ = fmt.Fprint(f, r.String()) }

// MarshalJSON carries outcome and reason only.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason,omitempty"`
	}{r.Outcome.String(), r.Reason})
}

// SilentWhy is what a name left Silent waits with: no answer within
// timeout, or, when the bus said at once that nothing listens on subject
// (NoResponders), that no vault does — not a slow one (an outside audit
// read "within 5s" for asks 1 s apart). Kept free of the ask's time, so
// asking again moves no need (SPEC §5.2).
func (r Result) SilentWhy(timeout time.Duration, subject string) string {
	if r.NoResponders {
		return "no answer: no vault listens on " + subject
	}
	return "no answer within " + timeout.String()
}

// Client asks the vault for secrets in the name of one node.
type Client struct {
	NC   *nats.Conn
	Node string
	Keys *Keys
	// Timeout is how long an ask waits for a reply; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log, when set, gets one debug line per ask: name and outcome, never
	// a value. The zero Logger logs nothing.
	Log zerolog.Logger
}

// Ask asks the vault for secret (a vault name) on behalf of module and
// waits for the reply. It never returns a Go error: every way an ask can
// end is an Outcome.
func (c *Client) Ask(ctx context.Context, secret, module string) Result {
	return c.AskCredential(ctx, secret, module, "")
}

// AskCredential is Ask with the credential form a provisions entry's
// request carries ("" for every other request: left out of the JSON).
func (c *Client) AskCredential(ctx context.Context, secret, module, credential string) Result {
	r := c.ask(ctx, secret, module, credential)
	ev := c.Log.Debug().Str("secret", secret).Str("module", module).Str("outcome", r.Outcome.String())
	if r.Outcome == Silent || r.Outcome == Error {
		// This client's own words. A refusal's or an absence's reason is
		// the vault's own text, which may quote a secret (an outside
		// audit: an absence's "the previous one <value> was revoked"):
		// the daemon says a refusal's once it has looked (never here,
		// where what this client holds is not known).
		ev = ev.Str("reason", r.Reason)
	}
	ev.Msg("vault ask")
	return r
}

func (c *Client) ask(ctx context.Context, secret, module, credential string) Result {
	if c.NC == nil || c.Keys == nil || c.Keys.public == nil {
		return Result{Outcome: Error, Reason: fmt.Sprintf("asking the vault for %s: client has no connection or no keys", secret)}
	}
	if !c.NC.IsConnected() {
		// Not sent: nats.go would buffer it and send it as the bus comes
		// back, its wait long over, every such ask of the node at the same
		// instant, where the Asker asks again within a spread (Reask,
		// SPEC §4.2 r2); an outside audit saw 40 asks in 45 ms.
		return Result{Outcome: Error, Reason: fmt.Sprintf("asking the vault for %s: the bus is not connected", secret)}
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	subject := spec.VaultGetSubject(c.Node)
	body, err := json.Marshal(Request{Secret: secret, Node: c.Node, Module: module, PublicKey: c.Keys.PublicBase64(), Credential: credential})
	if err != nil {
		return Result{Outcome: Error, Reason: fmt.Sprintf("encoding the vault request for %s: %v", secret, err)}
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := c.NC.RequestWithContext(actx, subject, body)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return Result{Outcome: Error, Reason: fmt.Sprintf("asking the vault for %s: %v", secret, ctx.Err())}
		case errors.Is(err, nats.ErrNoResponders):
			return Result{Outcome: Silent, NoResponders: true, Reason: fmt.Sprintf("no vault answers %s", subject)}
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
			return Result{Outcome: Silent, Reason: fmt.Sprintf("no reply from the vault on %s within %s", subject, timeout)}
		}
		return Result{Outcome: Error, Reason: fmt.Sprintf("asking the vault for %s on %s: %v", secret, subject, err)}
	}
	r := readReply(c.Keys, secret, msg.Data)
	r.Replied = true
	return r
}

// readReply reads the vault's reply data to an ask for secret: the value
// opened with keys, absent, refused, or an Error saying how the reply is
// out of shape.
func readReply(keys *Keys, secret string, data []byte) Result {
	// A reply out of shape is described, never quoted (the JSON decoder's
	// errors quote a byte of it): a vault gone wrong may have put the
	// value there, and the reason goes to logs and reports.
	var rep Reply
	if err := json.Unmarshal(data, &rep); err != nil {
		what := "is not JSON"
		if json.Valid(data) {
			what = `is not {"status", "box", "reason"} JSON`
		}
		return Result{Outcome: Error, Reason: fmt.Sprintf("vault reply for %s %s (%d bytes)", secret, what, len(data))}
	}
	switch rep.Status {
	case StatusSealed:
		value, err := keys.Open(rep.Box)
		if err != nil {
			return Result{Outcome: Error, Reason: fmt.Sprintf("vault reply for %s: %v", secret, err)}
		}
		return Result{Outcome: Sealed, Value: value}
	case StatusAbsent:
		reason := cutReason(rep.Reason)
		if reason == "" {
			reason = fmt.Sprintf("the vault holds no %s", secret)
		}
		return Result{Outcome: Absent, Reason: reason}
	case StatusRefused:
		reason := cutReason(rep.Reason)
		if reason == "" {
			reason = fmt.Sprintf("the vault refused %s without a reason", secret)
		}
		return Result{Outcome: Refused, Reason: reason}
	case "":
		return Result{Outcome: Error, Reason: fmt.Sprintf(`vault reply for %s has no status (%d bytes of JSON without a "status" of sealed, absent or refused)`,
			secret, len(data))}
	}
	return Result{Outcome: Error, Reason: fmt.Sprintf("vault reply for %s has a status (%d bytes) that is not sealed, absent or refused",
		secret, len(rep.Status))}
}

// maxReason bounds a reason the vault gives: it goes into log lines and
// reports whole otherwise (a 900 KB one made three log lines of as much).
const maxReason = 1024

// cutReason is the vault's reason cut to maxReason bytes, saying how
// long it was.
func cutReason(s string) string { return spec.Cut(s, maxReason) }

// Package ask is the prov.ask service (SPEC §5.4): a node's tool runner
// asks its client for a config value of a module on the node, on
// prov.ask.<node>, and is answered the value or why not. A secret never.
package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Request is what the tool runner asks.
type Request struct {
	Module string `json:"module"`
	Kind   string `json:"kind"`
	Key    string `json:"key"`
}

// Reply is the answer: the value, or the error saying why not.
type Reply struct {
	Value *string `json:"value,omitempty"`
	Error string  `json:"error,omitempty"`
}

// Lookup finds module's config value key as mesh-config_resolved holds it;
// assigned says whether module is on the node at all. It returns an error
// when it could not look (the client busy past ctx), or nodes.ErrNoPlan
// when module's assignment to the node carries no provisioning plan (SPEC
// §3 r2: assigned, but not the provisioner's), or an *Unreadable when the
// value is not found because the config bucket cannot be read.
type Lookup func(ctx context.Context, module, key string) (value []byte, assigned, found bool, err error)

// timeout bounds one look-up: a client busy longer answers so.
const timeout = 5 * time.Second

// Serve answers prov.ask.<node> on nc with lookup until the returned stop
// is called.
//
// Only the node's tool runner may publish the subject (SPEC §5.4, by bus
// permission), but nats-server checks no push consumer's deliver subject
// against its creator's rights: any client may have JetStream deliver a
// question it wrote as one of its own keys here, and a stream's manager
// may republish one. Such a message keeps the stream's subject (a
// republish carries Nats-Stream); it is no question of the tool runner's
// and is not answered (its reply subject is the consumer's $JS.ACK, where
// the value would have gone).
func Serve(ctx context.Context, nc *nats.Conn, node string, lookup Lookup) (stop func(), err error) {
	subject := spec.AskSubject(node)
	sub, err := nc.Subscribe(subject, func(msg *nats.Msg) {
		if msg.Subject != subject || msg.Header.Get(jetstream.StreamHeader) != "" {
			return
		}
		b, _ := json.Marshal(Answer(ctx, node, msg.Data, lookup))
		if limit := nc.MaxPayload(); limit > 0 && int64(len(b)) > limit {
			// Too large to answer on the bus: said, not left unanswered.
			b, _ = json.Marshal(Reply{Error: fmt.Sprintf("the answer is %d bytes as JSON, over the %d bytes the bus carries in one message", len(b), limit)})
		}
		_ = msg.Respond(b)
	})
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// Answer is the reply to one request: only config values are answered,
// only for a module assigned to node and a key resolved for it.
func Answer(ctx context.Context, node string, data []byte, lookup Lookup) Reply {
	var q Request
	if err := json.Unmarshal(data, &q); err != nil {
		return Reply{Error: "request is not {module, kind, key}: " + err.Error()}
	}
	if q.Kind == "" { // left out, or null: "kind  is not answered" would name nothing
		return Reply{Error: `no kind given: ask {"module", "kind": "config", "key"}; only config values are answered (a secret never)`}
	}
	if q.Kind != string(spec.Config) {
		return Reply{Error: "kind " + q.Kind + " is not answered here: only config values are (a secret never)"}
	}
	if q.Module == "" || q.Key == "" {
		return Reply{Error: "module and key are required"}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, assigned, found, err := lookupLoaded(cctx, lookup, q.Module, q.Key)
	var unread *Unreadable
	var noAssignments *AssignmentsUnreadable
	switch {
	case errors.Is(err, nodes.ErrNoPlan):
		// Not "not assigned": it is, and a tool runner told so would
		// wait for a prov.changed that says nothing new.
		return Reply{Error: "module " + q.Module + " is assigned to node " + node +
			` without a provisioning plan (its assignment carries no "provisioning"): the provisioner answers nothing for it`}
	case errors.As(err, &noAssignments):
		// Not "busy, starting": the client may have started long ago, and
		// a tool runner told to ask again would ask forever.
		return Reply{Error: "whether module " + q.Module + " is assigned to node " + node + " cannot be read yet: " + noAssignments.Why}
	case errors.As(err, &unread):
		// Not "not resolved": the key may be written, and a tool runner's
		// operator would look for it in mesh-config and find it there.
		return Reply{Error: "config value " + q.Key + " of module " + q.Module + " cannot be read: " + unread.Why}
	case err != nil:
		return Reply{Error: "the client is busy: " + err.Error()}
	case !assigned:
		return Reply{Error: "module " + q.Module + " is not assigned to node " + node}
	case !found:
		return Reply{Error: "no config value " + q.Key + " is resolved for module " + q.Module}
	}
	if !utf8.Valid(v) {
		// A JSON string would carry other bytes than the bucket holds.
		return Reply{Error: "config value " + q.Key + " of module " + q.Module + " is not UTF-8 text: a JSON answer cannot carry its bytes as they are"}
	}
	s := string(v)
	return Reply{Value: &s}
}

// Unreadable is a Lookup's error for a module assigned to the node whose
// key has no value the client could read: the client cannot read
// mesh-config_resolved at all (SPEC §4.6: a bucket the bus refuses is not
// "not written yet"; nor is one that does not exist yet), Why saying so.
type Unreadable struct{ Why string }

func (u *Unreadable) Error() string { return u.Why }

// AssignmentsUnreadable is a Lookup's error while the client has never
// read the assignments bucket: it does not exist yet or the bus refuses it
// (SPEC §2.2, §4.6), Why saying which. Whether a module is assigned is not
// known; once the bucket is read, the start's prov.changed says so.
type AssignmentsUnreadable struct{ Why string }

func (u *AssignmentsUnreadable) Error() string { return u.Why }

// ErrNotLoaded is a Lookup's error while the client has not yet read the
// assignments and config buckets once (a client just started): a "not
// assigned" or "not resolved" then may only mean not read yet.
var ErrNotLoaded = errors.New("it is starting: its first read of the assignments and config is not done yet; ask again")

// lookupLoaded looks again, every 20 ms within ctx, while lookup says
// ErrNotLoaded, so a tool runner asking as the client starts is not told
// a module on the node is not assigned (SPEC §5.4: that sends it away
// until prov.changed); past ctx it is said as the start's.
func lookupLoaded(ctx context.Context, lookup Lookup, module, key string) ([]byte, bool, bool, error) {
	for {
		v, assigned, found, err := lookup(ctx, module, key)
		if !errors.Is(err, ErrNotLoaded) {
			return v, assigned, found, err
		}
		select {
		case <-ctx.Done():
			return nil, false, false, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

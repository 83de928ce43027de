package bus

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// InboxRefusedError: the bus does not let this connection's user hear
// replies on its inbox, so every request it makes goes unanswered.
type InboxRefusedError struct {
	User, Inbox string
}

func (e *InboxRefusedError) Error() string {
	who := "this connection's user"
	if e.User != "" {
		who = "user " + e.User
	}
	return fmt.Sprintf("the bus does not let %s hear replies on %s.> (the user of another node or role?)", who, e.Inbox)
}

// HearsInbox asks the bus whether nc's user may hear replies on its
// inbox (inbox: the prefix nc was given, InboxPrefix's, which the error
// names): it subscribes to a new inbox of nc's and waits for the bus to
// answer (within wait). A *InboxRefusedError says it may not, naming user
// (the user the connection gave, "" if none). A creds file says as much
// before a connection (CheckCreds); a user and password do not, and a
// client started with another node's user ran for ever saying "the
// initial load is not done", its only hint a permissions line among
// warnings. nil also when it cannot tell (not connected, no answer).
func HearsInbox(nc *nats.Conn, user, inbox string, wait time.Duration) error {
	if inbox == "" || !nc.IsConnected() {
		return nil
	}
	subject := nc.NewInbox()
	refused := make(chan struct{}, 1)
	forget := hearingOf(nc).awaitSubscription(subject, func(string) {
		select {
		case refused <- struct{}{}:
		default:
		}
	})
	defer forget()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		return nil
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.FlushTimeout(wait); err != nil {
		return nil
	}
	// The bus refuses a subscription before it answers the flush's ping:
	// its connection holds the refusal (unless another refusal came after
	// it: a client starting hears several), and its error handler (the
	// hearing) has it queued, called on a goroutine of its own, which a
	// loaded machine ran more than a moment later.
	if last := nc.LastError(); last != nil && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), subject) {
		return &InboxRefusedError{User: user, Inbox: inbox}
	}
	t := time.NewTimer(heardWithin)
	defer t.Stop()
	select {
	case <-refused:
		return &InboxRefusedError{User: user, Inbox: inbox}
	case <-t.C:
		return nil
	}
}

// heardWithin is how long HearsInbox waits, after the bus answered its
// flush, for the hearing of a refusal already queued.
const heardWithin = time.Second

// InboxCheck keeps what HearsInbox last said of a connection's user, for a
// readiness check: asked at start and each time the bus comes back (Check),
// it says the refusal while it holds (Refused) and logs it once, and when
// it is lifted (the bus's rights made right under a running client).
type InboxCheck struct {
	User, Inbox string // the connection's user ("" if none) and reply prefix
	Log         zerolog.Logger
	refused     atomic.Pointer[string]
}

// inboxCheckWait bounds Check's wait for the bus's answer.
const inboxCheckWait = 5 * time.Second

// Check asks the bus (HearsInbox) and keeps the answer.
func (c *InboxCheck) Check(nc *nats.Conn) {
	var refused *InboxRefusedError
	if !errors.As(HearsInbox(nc, c.User, c.Inbox, inboxCheckWait), &refused) {
		if c.refused.Swap(nil) != nil {
			c.Log.Info().Msg("the bus lets this client hear its replies now")
		}
		return
	}
	why := refused.Error() + ": every request of this client goes unanswered"
	if c.refused.Swap(&why) == nil {
		c.Log.Error().Msg(why)
	}
}

// Refused says why the bus refuses the user its replies ("": it does not,
// or it was not asked).
func (c *InboxCheck) Refused() string {
	if why := c.refused.Load(); why != nil {
		return *why
	}
	return ""
}

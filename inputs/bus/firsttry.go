package bus

import (
	"errors"
	"sync"

	"github.com/nats-io/nats.go"
)

// firstTry keeps why the first connect failed, for the line saying the bus
// is not reachable yet: a bus that refused the user ("authorization
// violation") is not one that is down. nats.go clears the first try's
// error (LastError) as its reconnect loop starts in the background, and
// hands it to the ReconnectErrHandler, run in the background too: so the
// reason is taken from whichever has it when the line is said, and when
// neither has it yet, the handler says it in a line of its own. A first try
// that found no server at all (ErrNoServers) is what the line says
// already.
type firstTry struct {
	mu      sync.Mutex
	err     error // the first try's error, as the handler had it
	up      bool  // connected once: later errors are no first try's
	pending bool  // the line was said without a reason: the handler says it
}

// connected records that the connection was made.
func (f *firstTry) connected() {
	f.mu.Lock()
	f.up = true
	f.mu.Unlock()
}

// failed takes an error the ReconnectErrHandler had, and says whether it is
// the first try's reason that the line went without.
func (f *firstTry) failed(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.up || f.err != nil || err == nil || errors.Is(err, nats.ErrNoServers) {
		return false
	}
	f.err = err
	p := f.pending
	f.pending = false
	return p
}

// said gives the reason for the line (last: LastError right after the
// first try), nil when none is known yet (the handler says it later).
func (f *firstTry) said(last error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if last == nil {
		last = f.err
	}
	f.pending = last == nil
	return last
}

package control

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/novox/mesh-provisioner/outputs/fill"
)

// FillHealth follows whether the fill socket answers, from the outcome of
// each fill request (Heard, the stage's OnFill): while the last request
// got no answer at all (the socket gone, a timeout, the connection cut),
// /healthz says the client unhealthy (503). An answer of any status, a
// refusal included, says the socket works. Every file is sent again at
// each refill (1 m by default), so a node-engine gone at rest is seen
// within one. A request not sent (over the limit) says nothing of it.
//
// A socket that takes requests and answers none (a node-engine that
// hangs) would be seen only when a request times out (5 min by default,
// as long as a slow restart may take): so requests are also counted out
// (Sent), and one that has waited HangAfter with no answer from the socket
// meanwhile says the client unhealthy too, until an answer comes.
type FillHealth struct {
	Socket string
	// HangAfter: requests out this long with nothing answered meanwhile
	// say the socket silent (0: DefaultFillHang).
	HangAfter time.Duration
	down      atomic.Pointer[silence]
	out       atomic.Int64 // requests sent, not yet answered
	heard     atomic.Int64 // Unix ns: the socket's last answer, or when requests began to be out
}

// DefaultFillHang is FillHealth.HangAfter's default: longer than most
// restarts take, well short of the request's own 5-minute timeout.
const DefaultFillHang = 2 * time.Minute

type silence struct {
	since time.Time
	why   string
}

// Sent says a fill request was sent; Heard takes its outcome.
func (h *FillHealth) Sent() {
	if h.out.Load() == 0 {
		h.heard.Store(time.Now().UnixNano())
	}
	h.out.Add(1)
}

// Heard takes in one fill request's outcome. Off the daemon's loop, and
// cheap: one atomic load when nothing moved.
func (h *FillHealth) Heard(err error) {
	tooLarge := errors.Is(err, fill.ErrTooLarge)
	_, unanswered := FillOutcome(err)
	if h.out.Load() > 0 {
		if !tooLarge && !unanswered {
			h.heard.Store(time.Now().UnixNano())
		}
		h.out.Add(-1)
	}
	if tooLarge {
		return
	}
	if !unanswered {
		if h.down.Load() != nil {
			h.down.Store(nil)
		}
		return
	}
	if h.down.Load() == nil {
		h.down.Store(&silence{since: time.Now(), why: oneLine(err.Error())})
	}
}

// Unhealthy says why the fill socket makes the client unhealthy (none:
// it does not).
func (h *FillHealth) Unhealthy() []string {
	if s := h.down.Load(); s != nil {
		return []string{"the fill socket " + h.Socket + " has not answered since " +
			s.since.UTC().Format(time.RFC3339) + ": " + s.why}
	}
	hang := h.HangAfter
	if hang <= 0 {
		hang = DefaultFillHang
	}
	if n := h.out.Load(); n > 0 {
		if since := time.Unix(0, h.heard.Load()); time.Since(since) >= hang {
			return []string{fmt.Sprintf("the fill socket %s has answered nothing since %s, with %d request(s) waiting for an answer (a slow restart, or a node-engine that hangs)",
				h.Socket, since.UTC().Format(time.RFC3339), n)}
		}
	}
	return nil
}

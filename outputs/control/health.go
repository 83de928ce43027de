package control

import (
	"errors"
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
type FillHealth struct {
	Socket string
	down   atomic.Pointer[silence]
}

type silence struct {
	since time.Time
	why   string
}

// Heard takes in one fill request's outcome. Off the daemon's loop, and
// cheap: one atomic load when nothing moved.
func (h *FillHealth) Heard(err error) {
	if errors.Is(err, fill.ErrTooLarge) {
		return
	}
	if _, unanswered := FillOutcome(err); !unanswered {
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
	s := h.down.Load()
	if s == nil {
		return nil
	}
	return []string{"the fill socket " + h.Socket + " has not answered since " +
		s.since.UTC().Format(time.RFC3339) + ": " + s.why}
}

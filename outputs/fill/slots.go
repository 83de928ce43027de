package fill

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxRequests is Server.MaxRequests's default: the client sends
// at most 8 modules' requests at once (outputs/stage), so its cold start
// never waits, and a burst holds at most 8 bodies of up to MaxBody in
// memory (with each its files decoded, and what it read to merge into).
const DefaultMaxRequests = 8

func (s *Server) maxRequests() int {
	if s.MaxRequests > 0 {
		return s.MaxRequests
	}
	return DefaultMaxRequests
}

// admit takes one of the server's MaxRequests slots for a request, once
// its body is read (readBody: one sent slowly held a slot, and with eight
// every fill, for the whole read timeout), before it is decoded and
// carried out: a burst of requests decoded at once held up to MaxBody of
// files each in memory, and could exhaust it (the bodies read and not yet
// decoded are bounded apart: bodyBudget). A request over the cap waits
// for a slot (it is not refused: the client's cold start sends several at
// once), as long as its client waits and at most the read timeout; past
// that it is answered 503 naming the cap. ok false: answered, or its
// client gone.
func (s *Server) admit(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	s.slotsOnce.Do(func() { s.slots = make(chan struct{}, s.maxRequests()) })
	// Its body is read (a fill's, whole, before: body.go; a DELETE has
	// none): from here the connection is read only by net/http's watch for
	// the client going, so no deadline (the wait for a slot is bounded by
	// the timer below). A deadline passed while the request waited or ran (its programs may take ProgramTimeout, 2 min, as long as
	// the read timeout) ended that watch as if the client had gone: the
	// connection's context was cancelled, and every later request on the
	// kept connection was taken for its client gone, not applied and
	// answered an empty 200 (an outside audit: healthy modules reported
	// failed at every refill until a restart). net/http sets the next
	// request's own deadlines as it reads it.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	select {
	case s.slots <- struct{}{}:
	default:
		if s.waiting != nil {
			s.waiting()
		}
		wait := orDefault(s.ReadTimeout, DefaultReadTimeout)
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case s.slots <- struct{}{}:
		case <-r.Context().Done():
			return nil, false
		case <-timer.C:
			s.Log.Warn().Str("request", r.Method+" "+r.URL.Path).Int("max_requests", s.maxRequests()).
				Msg("request waited for a slot for the whole read timeout: answered 503")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("mesh-fill is processing %d requests (its --max-requests) and this one waited %s for one of them to end; send it again",
				s.maxRequests(), wait))
			return nil, false
		}
	}
	var once sync.Once
	return func() { once.Do(func() { <-s.slots }) }, true
}

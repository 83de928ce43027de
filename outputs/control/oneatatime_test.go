package control

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The control socket's calls on the daemon's loop go one at a time, the
// others waiting off the loop until their own request ends: each runs
// between two of the loop's batches, and ten callers of status at once
// held a change's fill 135 ms at the median (an outside audit).
func TestTheControlSocketsCallsGoToTheLoopOneAtATime(t *testing.T) {
	var on, most, calls atomic.Int32
	h := Handler(Source{NotReady: func() []string { return nil }, Metrics: http.NotFoundHandler(),
		OnLoop: func(ctx context.Context, fn func(Answers)) error {
			n := on.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			calls.Add(1)
			time.Sleep(20 * time.Millisecond)
			on.Add(-1)
			return context.Canceled // what the daemon gives when its loop did not answer
		}})
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/modules", nil))
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	r := httptest.NewRecorder()
	h.ServeHTTP(r, httptest.NewRequest(http.MethodGet, "/v1/graph.dot", nil).WithContext(ctx)) // gives up while waiting its turn
	wg.Wait()
	if most.Load() != 1 || calls.Load() < 10 {
		t.Errorf("%d calls on the loop at once at the most (%d calls), want 1", most.Load(), calls.Load())
	}
	if r.Code != http.StatusServiceUnavailable {
		t.Errorf("a request that gave up waiting its turn: %d %s", r.Code, r.Body)
	}
}

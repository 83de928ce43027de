package fill

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestRequestsOverTheCapWaitAndAllSucceed: with MaxRequests 2, six
// requests sent at once are processed two at a time: the other four wait
// (none is refused) and all six are then written. Before, all six were
// processed at once, each holding its body in memory.
func TestRequestsOverTheCapWaitAndAllSucceed(t *testing.T) {
	const cap, n = 2, 6
	root := t.TempDir()
	var active, most, waiting atomic.Int32
	gate := make(chan struct{})
	s := &Server{Root: root, MaxRequests: cap}
	s.OnRequest = func(Request) {
		a := active.Add(1)
		for m := most.Load(); a > m && !most.CompareAndSwap(m, a); m = most.Load() {
		}
		<-gate
		active.Add(-1)
	}
	s.waiting = func() { waiting.Add(1) }
	c := startServer(t, s)

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = c.Fill(context.Background(), Request{Module: fmt.Sprint("m", i), Whole: true,
				Files: []File{{Path: fmt.Sprintf("/etc/m%d.conf", i), Form: FormOwned, Content: []byte("x\n")}}})
		})
	}
	// every request is in: processed (held at the gate) or waiting
	bustest.Eventually(t, 30*time.Second, func() error {
		if a, w := active.Load(), waiting.Load(); a+w != n {
			return fmt.Errorf("%d processed, %d waiting", a, w)
		}
		return nil
	})
	if a := active.Load(); a != cap {
		t.Errorf("%d requests processed at once, want %d", a, cap)
	}
	close(gate)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		mustRead(t, fmt.Sprintf("%s/etc/m%d.conf", root, i), "x\n")
	}
	if m := most.Load(); m > cap {
		t.Errorf("at most %d requests were processed at once, want %d", m, cap)
	}
}

package server

import (
	"context"
	"sync"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Sweeps asked together share a sweep begun after each was asked: fifty
// at once were answered one sweep each, one at a time, the last after
// 22 s (an outside audit). One asked after a sweep began gets one of its
// own: what it is answered is read after it asked.
func TestSweepsAskedTogetherShareOne(t *testing.T) {
	_, js := bustest.JetStream(t, bustest.Start(t))
	ensureRegistered(t, js)
	if _, err := bucket(t, js, spec.AppliedBucket).Put(context.Background(), "ace.web", []byte(`{"node":"ace","module":"web","state":"applied"}`)); err != nil {
		t.Fatal(err)
	}
	c := newSweepCache(js)
	p := SweepParams{StoodAfter: 10 * 60e9}
	var wg sync.WaitGroup
	replies := make([][]byte, 30)
	for i := range replies {
		wg.Go(func() {
			b, err := c.page(context.Background(), p, 0, 1<<20)
			if err != nil {
				t.Error(err)
			}
			replies[i] = b
		})
	}
	wg.Wait()
	if n := c.started.Load(); n > 3 {
		t.Errorf("30 sweeps asked together made %d sweeps", n)
	}
	distinct := map[string]bool{}
	for _, b := range replies {
		distinct[string(b)] = true
	}
	if uint64(len(distinct)) > c.started.Load() {
		t.Errorf("%d distinct replies of %d sweeps", len(distinct), c.started.Load())
	}
	if c.last != nil {
		t.Error("the sweep shared is kept once no request waits for it")
	}
	before := c.started.Load()
	for range 3 {
		if _, err := c.page(context.Background(), p, 0, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.started.Load() - before; n != 3 {
		t.Errorf("three sweeps asked one after another made %d", n)
	}
}

package server

import (
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// While the sweeps fail (the bus away), the gauges of the last sweep are
// not shown as the mesh's now, but its time still is: an alert on the
// sweep's age fires, where with no sample at all it would need absent().
func TestAFailedSweepStillShowsWhenTheLastWasMade(t *testing.T) {
	was := readTimeout
	readTimeout = time.Second
	t.Cleanup(func() { readTimeout = was })
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	ensure(t, js)
	cache := newSweepCache(js)
	reg, _ := newMetrics(cache, quietLog())
	gauges := func() map[string]float64 {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range fams {
			for _, m := range f.Metric {
				out[f.GetName()] = m.GetGauge().GetValue()
			}
		}
		return out
	}
	before := gauges()
	at, ok := before["mesh_provisioner_sweep_timestamp_seconds"]
	if !ok || at == 0 {
		t.Fatalf("no sweep time after a sweep: %v", before)
	}
	if _, ok := before["mesh_provisioner_orphans"]; !ok {
		t.Fatalf("no orphans gauge after a sweep: %v", before)
	}
	bustest.Stop(s)
	cache.mu.Lock()
	cache.now = func() time.Time { return time.Now().Add(time.Hour) } // the last sweep too old to serve
	cache.mu.Unlock()
	after := gauges()
	if got := after["mesh_provisioner_sweep_timestamp_seconds"]; got != at {
		t.Errorf("with the sweep failing, the sweep time reads %v, want the last sweep's %v (%v)", got, at, after)
	}
	if _, ok := after["mesh_provisioner_orphans"]; ok {
		t.Errorf("with the sweep failing, the last sweep's gauges are shown as now: %v", after)
	}
}

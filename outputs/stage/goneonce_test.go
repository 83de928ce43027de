package stage

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A module that left while the client was down is told to the
// node-engine once: the start's Sweep sent its DELETE from the applied
// key's read and again from the list of modules gone (two DELETEs 6 ms
// apart, an outside audit), and a Sweep run again after the removal was
// answered (a key whose delete did not hold, the bus back) sent it again
// at every retry tick, each logged as the files removed.
func TestAModuleGoneWhileTheClientWasDownIsRemovedOnce(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	put := func() {
		for _, k := range []struct{ bucket, key, value string }{
			{"mesh-provisioner_applied", "n1.gone", `{"node":"n1","module":"gone","state":"applied","files":[]}`},
			{"mesh-provisioner_needs", "n1.gone.config.x", `{"node":"n1","module":"gone","kind":"config","name":"x","state":"met"}`},
			{"mesh-provisioner_collect", "n1.hosts.gone", `a`},
		} {
			kv, err := r.js.KeyValue(ctx, k.bucket)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := kv.Put(ctx, k.key, []byte(k.value)); err != nil {
				t.Fatal(err)
			}
		}
	}
	removals := func() int {
		for r.s.InFlight() > 0 {
			select {
			case d := <-r.s.Back():
				r.s.Land(d)
			case <-time.After(10 * time.Second):
				t.Fatalf("%d requests still in flight", r.s.InFlight())
			}
		}
		return strings.Count(r.log.String(), `"module":"gone","files":0,"message":"the node-engine held no files of the module: none removed"`)
	}
	none := func(string) bool { return false }

	put()
	r.s.Sweep(ctx, none) // the start's clean-up
	if n := removals(); n != 1 {
		t.Errorf("the start's clean-up had the node-engine remove the module %d times, want once\n%s", n, r.log)
	}
	for _, k := range [][2]string{{"mesh-provisioner_applied", "n1.gone"}, {"mesh-provisioner_needs", "n1.gone.config.x"}, {"mesh-provisioner_collect", "n1.hosts.gone"}} {
		if v, ok := r.get(k[0], k[1]); ok {
			t.Errorf("%s %s still holds %s", k[0], k[1], v)
		}
	}

	r.s.Forget() // the bus came back, and the module's keys are there again
	put()
	for range 3 {
		r.s.Sweep(ctx, none)
		r.s.RetryRemovals(ctx) // the retry tick
	}
	if n := removals(); n != 1 {
		t.Errorf("sweeps after the removal was answered had the node-engine remove the module %d times in all, want once\n%s", n, r.log)
	}
	if v, ok := r.get("mesh-provisioner_applied", "n1.gone"); ok {
		t.Errorf("the applied key holds %s after the sweeps", v)
	}
}

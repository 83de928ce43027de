package stage

import (
	"context"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// The bus came back, so the publisher forgot what it wrote, and the
// module was taken off the node before its keys were written again: its
// removal deletes none of them itself (it knows of none), and the next
// Sweep (the retry tick) reads the bus and deletes them all. Before, a
// sweep that had held once was never run again, and the module's needs
// and items outlived it for good (chaos seed 887105).
func TestAModuleRemovedAfterTheBusCameBackLosesItsKeysAtTheNextSweep(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	v := &nodes.ModuleView{Name: "web", State: graph.Ready,
		Files: []nodes.FileView{ready(owned("/etc/web.conf", "port 80\n", false))},
		Items: []nodes.ItemView{{Collection: "hosts", State: graph.Ready, Text: []byte("10.0.0.1 web")}},
		Needs: []nodes.NeedView{{Kind: "config", Name: "port", State: graph.Ready}}}
	r.send(ctx, views{"web": v}, []string{"web"}, false)
	r.s.FlushNeeds(ctx, true)
	r.s.Sweep(ctx, func(m string) bool { return m == "web" }) // the start's sweep: nothing to delete
	keys := []struct{ bucket, key string }{
		{"mesh-provisioner_needs", "n1.web.config.port"}, {"mesh-provisioner_collect", "n1.hosts.web"},
	}
	for _, k := range keys {
		if _, ok := r.get(k.bucket, k.key); !ok {
			t.Fatalf("%s %s not written", k.bucket, k.key)
		}
	}

	r.s.Forget() // the bus came back
	r.s.Removed(ctx, "web")
	r.s.Sweep(ctx, func(string) bool { return false }) // the next retry tick
	for _, k := range keys {
		if v, ok := r.get(k.bucket, k.key); ok {
			t.Errorf("%s %s still holds %s after the module left and a sweep", k.bucket, k.key, v)
		}
	}
	if v, ok := r.get("mesh-provisioner_applied", "n1.web"); ok {
		t.Errorf("the applied key holds %s after the module left", v)
	}
}

// After a reconnect the publisher remembers none of what it wrote; a
// placeholder a module drops then has no remembered key to delete. The
// bus is read again at the next retry tick's sweep, as at start, and the
// need's key goes (SPEC §4.7 r2: needs say what waits, nothing else).
func TestAPlaceholderDroppedAfterTheBusCameBackLosesItsNeedAtTheNextTick(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	live := func(m string) bool { return m == "web" }
	needs := []nodes.NeedView{{Kind: "config", Name: "port", State: graph.Ready}, {Kind: "config", Name: "host", State: graph.Ready}}
	v := &nodes.ModuleView{Name: "web", State: graph.Ready,
		Files: []nodes.FileView{ready(owned("/etc/web.conf", "port 80\n", false))},
		Needs: needs}
	r.send(ctx, views{"web": v}, []string{"web"}, false)
	r.s.FlushNeeds(ctx, true)
	r.s.Sweep(ctx, live) // the start's sweep: nothing to delete
	if _, ok := r.get("mesh-provisioner_needs", "n1.web.config.port"); !ok {
		t.Fatal("the need of port was not written")
	}

	r.s.Forget() // the bus came back
	v2 := &nodes.ModuleView{Name: "web", State: graph.Ready,
		Files: []nodes.FileView{ready(owned("/etc/web.conf", "host a\n", false))},
		Needs: needs[1:]} // the plan no longer reads port
	r.send(ctx, views{"web": v2}, []string{"web"}, false)
	r.s.FlushNeeds(ctx, true)
	// The retry tick, as the daemon runs it: sweep, then what is retrying.
	for range 2 {
		r.s.Sweep(ctx, live)
		r.send(ctx, views{"web": v2}, r.s.Retrying(), false)
		r.s.FlushNeeds(ctx, true)
	}
	if v, ok := r.get("mesh-provisioner_needs", "n1.web.config.port"); ok {
		t.Errorf("the need of port, dropped after the bus came back, still holds %s", v)
	}
	if _, ok := r.get("mesh-provisioner_needs", "n1.web.config.host"); !ok {
		t.Error("the need of host, still read, was deleted")
	}
}

// Needs the same as those last written are not queued again; but a need
// that moved and came back before its flush (input kept coming) is
// written as it is now, not as it was in between, and after the bus came
// back every module's needs are written again with its next send.
func TestNeedsBackToWhatWasWrittenBeforeTheirFlushStayAsTheyAre(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	busy := false
	r.s.cfg.Busy = func() bool { return busy }
	view := func(state graph.State, content string) *nodes.ModuleView {
		return &nodes.ModuleView{Name: "web", State: graph.Ready,
			Files: []nodes.FileView{ready(owned("/etc/web.conf", content, false))},
			Needs: []nodes.NeedView{{Kind: "config", Name: "port", State: state, Why: "why " + state.String()}}}
	}
	need := func() string {
		t.Helper()
		v, ok := r.get("mesh-provisioner_needs", "n1.web.config.port")
		if !ok {
			t.Fatal("the need of port is not written")
		}
		return v
	}
	r.send(ctx, views{"web": view(graph.Ready, "a\n")}, []string{"web"}, false)
	if !strings.Contains(need(), `"met"`) {
		t.Fatalf("need %s", need())
	}

	busy = true // more input queued: needs wait
	r.send(ctx, views{"web": view(graph.Waiting, "b\n")}, []string{"web"}, false)
	r.send(ctx, views{"web": view(graph.Ready, "c\n")}, []string{"web"}, false)
	busy = false
	r.s.FlushNeeds(ctx, false)
	if v := need(); !strings.Contains(v, `"met"`) {
		t.Errorf("the need, met again before its flush, says %s", v)
	}

	kv, err := r.js.KeyValue(ctx, "mesh-provisioner_needs")
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "n1.web.config.port"); err != nil { // the bus lost it while away
		t.Fatal(err)
	}
	r.s.Forget()
	r.send(ctx, views{"web": view(graph.Ready, "d\n")}, []string{"web"}, false)
	if v := need(); !strings.Contains(v, `"met"`) {
		t.Errorf("after the bus came back the need says %s", v)
	}
}

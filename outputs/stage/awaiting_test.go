package stage

import (
	"context"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// Needs wait for what is on their way: a fill in flight (a flush would
// hold the daemon's loop while its answer waits) and an answer
// Config.Awaiting names (a vault answer may move them). The Send that
// takes the last of them in writes the needs; a forced flush (the
// daemon's retry tick) waits for neither.
func TestNeedsWaitForTheFillsInFlightAndTheAnswersAwaited(t *testing.T) {
	defer func(n int) { manyNeedsAt = n }(manyNeedsAt)
	manyNeedsAt = 1 // the rig's needs stand for a cold start's tens of thousands
	r := newRig(t)
	ctx := context.Background()
	awaiting := false
	r.s.cfg.Awaiting = func() bool { return awaiting }
	at := func(module, content string) *nodes.ModuleView {
		v := owned("/etc/"+module+".conf", content, false)
		return &nodes.ModuleView{Name: module, State: graph.Ready, Files: []nodes.FileView{ready(v)},
			Needs: []nodes.NeedView{{Kind: "config", Name: "port", State: graph.Ready}}}
	}
	written := func(module string) bool {
		t.Helper()
		_, ok := r.get("mesh-provisioner_needs", "n1."+module+".config.port")
		return ok
	}
	vs := views{"web": at("web", "1")}

	r.s.Send(ctx, vs, []string{"web"}, false)
	if written("web") {
		t.Fatal("the needs were written while the fill was in flight")
	}
	awaiting = true
	r.s.Land(r.next())
	r.s.Send(ctx, vs, nil, false) // the batch that takes the fill in
	r.settle()
	if _, ok := r.get("mesh-provisioner_applied", "n1.web"); !ok {
		t.Fatal("the fill that came back is not reported")
	}
	if written("web") {
		t.Fatal("the needs were written while an answer was awaited")
	}
	awaiting = false
	r.s.Send(ctx, vs, nil, false) // the batch that takes the answer in
	if !written("web") {
		t.Fatal("the needs were not written once nothing was on its way")
	}

	vs["db"] = at("db", "1")
	r.s.Send(ctx, vs, []string{"db"}, false)
	r.s.FlushNeeds(ctx, true)
	if !written("db") {
		t.Error("a forced flush waited for the fill in flight")
	}
	r.s.Land(r.next())
}

// A few needs (fewer than manyNeedsAt: not a cold start's) are written at
// once, whatever is on its way: a module's needs are on the bus by the
// time its report is.
func TestAFewNeedsDoNotWaitForWhatIsOnItsWay(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.s.cfg.Awaiting = func() bool { return true }
	v := owned("/etc/web.conf", "1", false)
	vs := views{"web": &nodes.ModuleView{Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(v)},
		Needs: []nodes.NeedView{{Kind: "config", Name: "port", State: graph.Ready}}}}
	r.s.Send(ctx, vs, []string{"web"}, false)
	if _, ok := r.get("mesh-provisioner_needs", "n1.web.config.port"); !ok {
		t.Fatal("a module's few needs waited for its fill in flight and an answer awaited")
	}
	r.s.Land(r.next())
}

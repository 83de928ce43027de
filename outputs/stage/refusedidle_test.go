package stage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// refusedMesh is one module, web, whose request mesh-fill refuses (400:
// a form it does not know).
func refusedMesh() views {
	bad := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/x", Form: "nonsense"}, []byte("x"), false)
	return views{"web": {Name: "web", State: graph.Ready, Plan: "p1", Files: []nodes.FileView{ready(bad)}}}
}

// While all that waits is a refusal's wait, the stage is at rest: the
// daemon's retry tick, which wakes only while it is not, sleeps until the
// wait has passed instead of waking every Recheck to send nothing. Over
// an hour of 5 s ticks the refused request goes as before (a tick's wait
// doubling up to refusedMax), and a tick that sends nothing is at most
// the one after each refusal (the daemon arms it after every batch).
func TestARefusalsWaitLetsTheRetryTickSleep(t *testing.T) {
	r := newRig(t)
	e := r.engine()
	ctx := context.Background()
	const tick = 5 * time.Second
	c := r.clocked(tick)
	mesh := refusedMesh()
	r.s.Sweep(ctx, func(string) bool { return true })
	r.send(ctx, mesh, []string{"web"}, false)
	if n := e.take("web"); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	r.mustSayFailed("web", "nonsense")

	sent, idle := 0, 0
	for range time.Hour / tick {
		c.at = c.at.Add(tick)
		if r.s.AtRest() {
			continue // the daemon's tick sleeps
		}
		r.tick(ctx, mesh)
		if n := e.take("web"); n > 0 {
			sent += n
		} else {
			idle++
		}
	}
	// 5 s, 10 s, … 160 s, then every 5 minutes: 16 in the hour.
	if sent < 15 || sent > 17 {
		t.Errorf("the refused request went %d times in an hour, want about 16", sent)
	}
	if idle > sent+1 {
		t.Errorf("the retry tick woke %d times in an hour to send nothing (%d sends), want no more than once a send", idle, sent)
	}
	r.mustSayFailed("web", "nonsense")
}

// The stage wakes the loop (HoldC) when a refusal's wait has passed, and
// the Send of that wake-up sends the refused request: nothing else needs
// to tick for it.
func TestTheStageWakesTheLoopWhenARefusalsWaitPasses(t *testing.T) {
	r := newRig(t)
	e := r.engine()
	ctx := context.Background()
	r.s.cfg.Retry = 200 * time.Millisecond // the real clock's: the wake-up is a real timer
	mesh := refusedMesh()
	r.s.Sweep(ctx, func(string) bool { return true })
	r.send(ctx, mesh, []string{"web"}, false)
	if n := e.take("web"); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	for round := range 3 { // each wait twice the one before
		if !r.s.AtRest() {
			r.tick(ctx, mesh) // the tick the batch that landed the refusal arms
		}
		if n := e.take("web"); n != 0 {
			t.Fatalf("round %d: the refused request went again before its wait passed (%d)", round, n)
		}
		if !r.s.AtRest() {
			t.Fatalf("round %d: not at rest with only a refusal waiting", round)
		}
		wake := r.s.HoldC()
		if wake == nil {
			t.Fatalf("round %d: no wake-up armed for the refusal's wait", round)
		}
		select {
		case <-wake:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: no wake-up within 30s", round)
		}
		r.s.Woke()
		r.send(ctx, mesh, nil, false) // the loop's batch for the wake-up
		if n := e.take("web"); n != 1 {
			t.Fatalf("round %d: the wake-up's Send made %d requests, want the refused one again", round, n)
		}
		r.mustSayFailed("web", "nonsense")
	}
}

// A removal mesh-fill refuses (403) lets the retry tick sleep through its
// wait too; it goes again as before, and the removal stays pending.
func TestARefusedRemovalsWaitLetsTheRetryTickSleep(t *testing.T) {
	r := newRig(t)
	_, refusals := r.refusingEngine()
	ctx := context.Background()
	const tick = 5 * time.Second
	c := r.clocked(tick)
	r.s.Sweep(ctx, func(string) bool { return true })
	r.s.Remove(ctx, "old")
	r.send(ctx, views{}, nil, false)
	if n := refusals(); n != 1 {
		t.Fatalf("mesh-fill refused %d requests, want 1", n)
	}

	sent, idle := 0, 0
	for range time.Hour / tick {
		c.at = c.at.Add(tick)
		if r.s.AtRest() {
			continue // the daemon's tick sleeps
		}
		was := refusals()
		r.s.RetryRemovals(ctx) // the tick
		r.send(ctx, views{}, nil, false)
		if n := refusals() - was; n > 0 {
			sent += n
		} else {
			idle++
		}
	}
	if sent < 15 || sent > 17 {
		t.Errorf("the refused DELETE went %d times in an hour, want about 16", sent)
	}
	if idle > sent+1 {
		t.Errorf("the retry tick woke %d times in an hour to send nothing (%d sends), want no more than once a send", idle, sent)
	}
	if got := r.s.Removing(); fmt.Sprint(got) != "[old]" {
		t.Errorf("removing %v, want [old]", got)
	}
}

// A refused removal's wait passing wakes the loop too, and the Send of
// the wake-up sends the DELETE again.
func TestTheStageWakesTheLoopWhenARefusedRemovalsWaitPasses(t *testing.T) {
	r := newRig(t)
	_, refusals := r.refusingEngine()
	ctx := context.Background()
	r.s.cfg.Retry = 200 * time.Millisecond // the real clock's: the wake-up is a real timer
	r.s.Sweep(ctx, func(string) bool { return true })
	r.s.Remove(ctx, "old")
	r.send(ctx, views{}, nil, false)
	for round := range 3 {
		was := refusals()
		if !r.s.AtRest() {
			t.Fatalf("round %d: not at rest with only a refused removal waiting", round)
		}
		wake := r.s.HoldC()
		if wake == nil {
			t.Fatalf("round %d: no wake-up armed for the refused removal's wait", round)
		}
		select {
		case <-wake:
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: no wake-up within 30s", round)
		}
		r.s.Woke()
		r.send(ctx, views{}, nil, false) // the loop's batch for the wake-up
		if n := refusals() - was; n != 1 {
			t.Fatalf("round %d: the wake-up's Send made %d DELETEs, want the refused one again", round, n)
		}
	}
	if got := r.s.Removing(); fmt.Sprint(got) != "[old]" {
		t.Errorf("removing %v, want [old]", got)
	}
}

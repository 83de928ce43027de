package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// failingProgramEngine is a real mesh-fill whose restarts and reloads
// fail ("unit <unit> failed to start") until mend(true); ran is how many
// programs it ran since the last call.
func (r *rig) failingProgramEngine() (e *engine, ran func() int, mend func(bool)) {
	dir := r.t.TempDir()
	runs, mended := filepath.Join(dir, "runs"), filepath.Join(dir, "mended")
	e = &engine{t: r.t, sock: shortSock(r.t, "engine"), root: r.root, got: map[string]int{},
		command: []string{"sh", "-c", fmt.Sprintf(`echo "$0 $1" >> %s; [ -e %s ] || { echo "unit $1 failed to start" >&2; exit 3; }`, runs, mended)}}
	e.start()
	r.t.Cleanup(func() { e.stop() })
	r.s.cfg.Fill = &fill.Client{Socket: e.sock, Timeout: 5 * time.Second}
	seen := 0
	ran = func() int {
		b, _ := os.ReadFile(runs)
		n := strings.Count(string(b), "\n")
		defer func() { seen = n }()
		return n - seen
	}
	mend = func(ok bool) {
		r.t.Helper()
		var err error
		if ok {
			err = os.WriteFile(mended, nil, 0o600)
		} else {
			err = os.Remove(mended)
		}
		if err != nil {
			r.t.Fatal(err)
		}
	}
	return e, ran, mend
}

// restarting is module web with one file, /etc/web.conf holding content,
// whose change restarts web.service.
func restarting(content string) views {
	f := nodes.NewFileValue(&nodes.FileSpec{Path: "/etc/web.conf", Form: fill.FormOwned, Mode: "0640",
		OnChange: nodes.OnChange{Action: fill.OnChangeRestart, Unit: "web.service"}}, []byte(content), false)
	return views{"web": {Name: "web", State: graph.Ready, Plan: "p1", Files: []nodes.FileView{ready(f)}}}
}

// A module whose files mesh-fill writes but whose restart fails (mesh-fill
// answers 500, the program still owed) is not sent again at every retry
// tick, which restarted a unit that fails to start some 700 times an
// hour: the same request goes again a tick later, then two, four, ..., up
// to refusedMax, as a refused one does; a full send (the refill tick, a
// reconnect) goes as ever. The module stays failed with the program's reason
// throughout. A change of the module goes at once; a fill that holds
// starts the wait again from the tick.
func TestAFailingRestartIsTriedLongerApartAndAChangeGoesAtOnce(t *testing.T) {
	r := newRig(t)
	_, ran, mend := r.failingProgramEngine()
	ctx := context.Background()
	c := r.clocked(time.Second)
	conf := filepath.Join(r.root, "etc/web.conf")
	const why = "unit web.service failed to start"

	mesh := restarting("one")
	r.send(ctx, mesh, []string{"web"}, false)
	if n := ran(); n != 1 {
		t.Fatalf("%d programs run, want 1", n)
	}
	mustHold(t, conf, "one")
	r.mustSayFailed("web", why)

	var ranAt []int
	for i := 1; i <= 16; i++ {
		c.at = c.at.Add(time.Second)
		r.tick(ctx, mesh)
		if n := ran(); n > 0 {
			ranAt = append(ranAt, i)
		}
		r.mustSayFailed("web", why)
	}
	if fmt.Sprint(ranAt) != "[1 3 7 15]" {
		t.Errorf("over 16 ticks a second apart the failing restart ran at ticks %v, want [1 3 7 15]", ranAt)
	}

	// A full send within the wait (the refill tick, a reconnect) goes all
	// the same, as for a refusal: every file sent again (SPEC §4.3).
	r.send(ctx, mesh, []string{"web"}, true)
	if n := ran(); n != 1 {
		t.Errorf("a full send within the wait ran the failing restart %d times, want 1", n)
	}
	r.mustSayFailed("web", why)

	// A change goes at once; the wait goes on after it.
	mesh = restarting("two")
	r.send(ctx, mesh, []string{"web"}, false)
	if n := ran(); n != 1 {
		t.Errorf("a changed module: %d programs run, want 1 at once", n)
	}
	mustHold(t, conf, "two")
	r.mustSayFailed("web", why)
	c.at = c.at.Add(time.Second)
	r.tick(ctx, mesh)
	if n := ran(); n != 0 {
		t.Errorf("the tick after the change ran the failing restart again (%d)", n)
	}

	// At most refusedMax apart.
	for i := range 4 {
		c.at = c.at.Add(refusedMax)
		r.tick(ctx, mesh)
		if n := ran(); n != 1 {
			t.Fatalf("tick %d, %s after the last: %d programs run, want 1", i, refusedMax, n)
		}
		r.mustSayFailed("web", why)
	}

	// The unit mended: the next try holds, and the module is applied.
	mend(true)
	c.at = c.at.Add(refusedMax)
	r.tick(ctx, mesh)
	if n := ran(); n != 1 {
		t.Errorf("the try after the unit was mended: %d programs run, want 1", n)
	}
	if said, _ := r.s.Said("web"); said.State != "applied" {
		t.Fatalf("web said %+v once its restart held, want applied", said)
	}

	// Failing again later, it is tried again a tick later, not after the
	// wait it had reached.
	mend(false)
	mesh = restarting("three")
	r.send(ctx, mesh, []string{"web"}, false)
	r.mustSayFailed("web", why)
	ran()
	c.at = c.at.Add(time.Second)
	r.tick(ctx, mesh)
	if n := ran(); n != 1 {
		t.Errorf("a restart failing again after one held: %d programs run at the next tick, want 1", n)
	}
}

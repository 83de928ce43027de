package stage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// next takes the next outcome a request sent off the loop hands back.
func (r *rig) next() Done { r.t.Helper(); return r.nextOf(r.s) }

// nextOf takes the next outcome s hands back.
func (r *rig) nextOf(s *Stage) Done {
	r.t.Helper()
	select {
	case d := <-s.Back():
		return d
	case <-time.After(10 * time.Second):
		r.t.Fatal("no request came back")
		return Done{}
	}
}

// A module changed while its fill is in flight is not sent beside it: its
// changes wait, and go out together in one request once it is back.
func TestAModuleChangedWhileInFlightIsSentOnceAfterIt(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	at := func(content string) views {
		return views{"web": {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(owned("/etc/web.conf", content, false))}}}
	}
	r.s.Send(ctx, at("one"), []string{"web"}, false)
	first := r.next() // back, not yet taken in: still in flight for the stage
	r.s.Send(ctx, at("two"), []string{"web"}, false)
	r.s.Send(ctx, at("three"), []string{"web"}, false)
	if n := r.fillCount(); n != 1 {
		t.Fatalf("%d requests while the first was in flight, want the first alone", n)
	}
	r.settle()
	if _, ok := r.get("mesh-provisioner_applied", "n1.web"); ok {
		t.Fatal("a report before the fill was taken in")
	}

	r.s.Land(first)
	r.s.Send(ctx, at("three"), nil, false) // the loop's next batch
	r.settle()
	if _, ok := r.get("mesh-provisioner_applied", "n1.web"); !ok {
		t.Fatal("the fill that came back is not reported")
	}
	r.s.Land(r.next())
	r.s.Send(ctx, at("three"), nil, false)
	if n := r.fillCount(); n != 1 {
		t.Fatalf("%d requests after it came back, want one of the changes together", n)
	}
	if b, _ := os.ReadFile(filepath.Join(r.root, "etc/web.conf")); string(b) != "three" {
		t.Fatalf("web.conf %q, want three", b)
	}
	if r.s.InFlight() != 0 {
		t.Fatalf("%d in flight after both came back", r.s.InFlight())
	}
}

// A removal the node-engine did not answer is kept in Config.Removals: a
// stage made again from it still lists it, and forgets it once the module
// is sent again (back on the node) or removed.
func TestRemovalsNotAnsweredOutliveTheStage(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "state", "removals.json")
	down := &fill.Client{Socket: filepath.Join(t.TempDir(), "none.sock"), Timeout: time.Second}
	up := r.s.cfg.Fill
	r.s.cfg.Fill, r.s.cfg.Removals = down, file
	r.s.Removed(ctx, "web")
	r.s.Removed(ctx, "api")
	r.s.Land(r.next())
	r.s.Land(r.next())
	if got := r.s.Removing(); !slices.Equal(got, []string{"api", "web"}) {
		t.Fatalf("removing %v", got)
	}

	again, err := New(Config{Node: "n1", Fill: down, Pub: r.s.cfg.Pub, Removals: file, Log: r.s.cfg.Log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Stop)
	if got := again.Removing(); !slices.Equal(got, []string{"api", "web"}) {
		t.Fatalf("a stage made again from %s is removing %v", file, got)
	}
	back := views{"api": {Name: "api", State: graph.Waiting, Reason: "plan not there yet"}}
	again.Send(ctx, back, []string{"api"}, false)
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "api") || !strings.Contains(string(b), "web") {
		t.Fatalf("api is back on the node, yet %s holds %s", file, b)
	}
	again.cfg.Fill = up // the node-engine answers now
	again.RetryRemovals(ctx)
	again.Land(r.nextOf(again))
	if got := again.Removing(); len(got) != 0 {
		t.Fatalf("still removing %v once answered", got)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "web") {
		t.Fatalf("%s holds %s once web's removal was answered", file, b)
	}
}

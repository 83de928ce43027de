package stage

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// next takes the next outcome a request sent off the loop hands back.
func (r *rig) next() Done {
	r.t.Helper()
	select {
	case d := <-r.done:
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
	if _, ok := r.get("mesh-provisioner_applied", "n1.web"); ok {
		t.Fatal("a report before the fill was taken in")
	}

	r.s.Land(first)
	r.s.Send(ctx, at("three"), nil, false) // the loop's next batch
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

package stage

import (
	"context"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
)

// A module that leaves the node while its fill is in flight and comes back
// before it lands is sent whole again once it lands; the fill that landed
// was the module's before it left, and says nothing of it now: no report
// goes out of it (it said applied with no file, its moduleOut new and
// empty, while the whole request was still with the node-engine).
func TestAFillOfAModuleThatLeftAndCameBackIsNotReported(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	at := func(content string) views {
		return views{"web": {Name: "web", State: graph.Ready, Plan: "p", Files: []nodes.FileView{ready(owned("/etc/web.conf", content, false))}}}
	}
	r.send(ctx, at("one"), []string{"web"}, false)
	r.s.Send(ctx, at("two"), []string{"web"}, false)
	first := r.next() // back, not yet taken in
	r.s.Removed(ctx, "web")
	r.s.Send(ctx, at("two"), []string{"web"}, false) // back on the node
	r.settle()
	if v, ok := r.get("mesh-provisioner_applied", "n1.web"); ok {
		t.Fatalf("report %s after the module left", v)
	}
	r.s.Land(first)
	r.s.Send(ctx, at("two"), nil, false) // its whole request goes
	r.settle()
	if v, ok := r.get("mesh-provisioner_applied", "n1.web"); ok {
		t.Errorf("report %s before the request made since it came back landed", v)
	}
	r.s.Land(r.next())
	r.s.Send(ctx, at("two"), nil, false)
	r.settle()
	if v, ok := r.get("mesh-provisioner_applied", "n1.web"); !ok || !contains(v, `"state":"applied"`, "/etc/web.conf") {
		t.Errorf("report %s, %v once it landed; want applied naming /etc/web.conf", v, ok)
	}
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

package stage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// heldViews are web's views for the daemon's hold: ready with a content,
// or waiting as a view of a module whose plan newly reads a provider
// bucket not read yet says it (nodes.HoldUnread).
func heldViews(content string) views {
	return views{"web": {Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(owned("/etc/web.conf", content, false))}}}
}

const unreadWhy = "gitea_bound n1.web.gitea-read: not read yet (the client's first read of gitea_bound is under way)"

func unreadView() views {
	return views{"web": {Name: "web", State: graph.Waiting, Reason: unreadWhy,
		Files: []nodes.FileView{{Path: "/etc/web.conf", State: graph.Waiting, Why: unreadWhy}},
		Needs: []nodes.NeedView{{Kind: "bound", Name: "gitea-read:url", State: graph.Waiting, Why: unreadWhy}}}}
}

// eventsOf records the prov.applied events of n1.web.
func (r *rig) eventsOf() func() []string {
	r.t.Helper()
	var mu sync.Mutex
	var got []string
	sub, err := r.nc.Subscribe(spec.AppliedSubject("n1", "web"), func(m *nats.Msg) {
		mu.Lock()
		got = append(got, string(m.Data))
		mu.Unlock()
	})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { sub.Unsubscribe() })
	r.nc.Flush()
	return func() []string {
		r.nc.Flush()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// A module the daemon holds (Config.Held: its new plan reads a provider
// bucket not read yet, and its view says "not read yet") is sent nothing
// by the stage on its own: its fill back, touched while in flight, is not
// sent again with the held view, and no report, event or need says it
// waits. Once the hold ends (the bucket read) it goes as its view then
// says, and ends applied. Before, the fill back was sent again at once:
// the module was reported waiting ("not read yet") for a moment while
// its binding was written all along.
func TestAModuleTheDaemonHoldsIsNotSentByTheStageOnItsOwn(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	held := map[string]bool{}
	r.s.cfg.Held = func(m string) bool { return held[m] }
	events := r.eventsOf()

	r.send(ctx, heldViews("one"), []string{"web"}, false)
	r.fillCount()
	r.s.Send(ctx, heldViews("two"), []string{"web"}, false)
	first := r.next()                                         // back, not yet taken in: in flight for the stage
	r.s.Send(ctx, heldViews("three"), []string{"web"}, false) // touched in flight
	held["web"] = true                                        // its plan now reads gitea_bound, not read yet
	r.s.Land(first)
	r.s.Send(ctx, unreadView(), nil, false) // the loop's next batch: web held, not named
	r.s.FlushNeeds(ctx, true)
	r.settle()
	if r.s.InFlight() != 0 {
		t.Fatalf("web sent again while the daemon holds it")
	}
	if _, ok := r.get("mesh-provisioner_needs", spec.EncodeKey("n1", "web", "bound", "gitea-read:url")); ok {
		t.Error("a need of a held module was written")
	}
	if v, _ := r.get("mesh-provisioner_applied", "n1.web"); strings.Contains(v, `"state":"waiting"`) {
		t.Errorf("a held module's report says it waits: %s", v)
	}

	held["web"] = false // the bucket is read: the binding is there
	r.send(ctx, heldViews("four"), []string{"web"}, false)
	if b, _ := os.ReadFile(filepath.Join(r.root, "etc/web.conf")); string(b) != "four" {
		t.Fatalf("web.conf %q, want four", b)
	}
	if v, _ := r.get("mesh-provisioner_applied", "n1.web"); !strings.Contains(v, `"state":"applied"`) {
		t.Errorf("web's report once let go: %s", v)
	}
	for _, e := range events() {
		if strings.Contains(e, `"state":"waiting"`) {
			t.Errorf("an event says the held module waits: %s", e)
		}
	}
}

// A full send (a refill, a reconnect) while the daemon holds a module
// leaves it out, and its next request, once let go, carries every file
// (whole), as the full send's would have.
func TestAModuleHeldThroughAFullSendIsSentWholeOnceLetGo(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	held := map[string]bool{}
	r.s.cfg.Held = func(m string) bool { return held[m] }
	r.send(ctx, heldViews("one"), []string{"web"}, false)
	r.fillCount()
	held["web"] = true
	r.send(ctx, unreadView(), nil, true) // the daemon's full send: web held, not named
	if n := r.fillCount(); n != 0 {
		t.Fatalf("%d fill requests for a held module", n)
	}
	held["web"] = false
	r.s.Send(ctx, heldViews("one"), []string{"web"}, false)
	r.s.Land(r.next())
	select {
	case req := <-r.fills:
		if !req.Whole {
			t.Errorf("the request once let go is not whole: %+v", req)
		}
	default:
		t.Fatal("no fill request reached the node-engine once let go")
	}
}

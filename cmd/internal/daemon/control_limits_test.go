package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The whole graph of a big node is not drawn: the drawing is made on the
// loop, which fills nothing meanwhile (an outside audit: 165,000 nodes,
// 44 MB of DOT, every fill held 3-6 s, the client's memory four times its
// own for minutes; another: 20,000 held them 0.25-0.6 s a drawing). It is refused (413) saying how many nodes and how to
// draw a module's part, which is drawn.
func TestTheWholeGraphOfABigNodeIsNotDrawn(t *testing.T) {
	m := newMesh(t)
	// Files that wait for one config value no one wrote: many graph
	// nodes, no fill and one need a module.
	for i := range 60 {
		var files []nodes.FileSpec
		for f := range 100 {
			files = append(files, nodes.FileSpec{Path: fmt.Sprintf("/etc/big%d/%d.conf", i, f), Template: "t"})
		}
		m.assign("ace", fmt.Sprint("big", i), nodes.Plan{Files: files}, map[string]string{"t": "v = ${config:unset}\n"})
	}
	m.webModule()
	sock := ctlSock(t)
	d := m.client("ace", withControl(sock))
	m.waitState("ace", "big59", "waiting")
	m.waitState("ace", "web", "applied")
	var size int
	d.Do(context.Background(), func(g *nodes.NodeGraph) { size = g.GraphLen() })
	if size <= control.MaxWholeDOT {
		t.Fatalf("the graph has %d nodes, not over %d: the test draws nothing too big", size, control.MaxWholeDOT)
	}
	code, body := ctlGet(t, sock, "/v1/graph.dot")
	var e control.ErrorBody
	if code != http.StatusRequestEntityTooLarge || json.Unmarshal(body, &e) != nil ||
		!strings.Contains(e.Error, fmt.Sprint("holds ", size, " nodes")) || !strings.Contains(e.Error, "--module") {
		t.Errorf("the whole graph: %d %s", code, body)
	}
	if code, body := ctlGet(t, sock, "/v1/graph.dot?module=web"); code != http.StatusOK || !strings.Contains(string(body[:min(len(body), 40)]), "digraph") {
		t.Errorf("the module's part: %d %.200s", code, body)
	}
}

// A call of the control socket whose caller has gone (its request ended)
// before the loop came to it is not run: five drawings given up on held
// the fills 16 s (an outside audit).
func TestACallWhoseCallerHasGoneIsNotRun(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	d := m.client("ace")
	m.waitState("ace", "web", "applied")
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	for range 50 {
		d.Do(gone, func(*nodes.NodeGraph) { ran.Add(1) }) // queued or not, at random
	}
	if err := d.Do(context.Background(), func(*nodes.NodeGraph) {}); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d calls whose caller had gone were run", n)
	}
}

// A name not on a node of many modules is said with twenty of them, and
// how many more: a 1,000-module node's error was one line of 12 KB (an
// outside audit). The answer's JSON lists them all.
func TestANameNotOnABigNodeListsTwentyModules(t *testing.T) {
	m := newMesh(t)
	for i := range 25 {
		m.assign("ace", fmt.Sprintf("m%02d", i), nodes.Plan{}, nil)
	}
	sock := ctlSock(t)
	m.client("ace", withControl(sock))
	m.waitState("ace", "m24", "applied")
	code, body := ctlGet(t, sock, "/v1/explain?module=nope")
	var e control.ErrorBody
	if code != http.StatusNotFound || json.Unmarshal(body, &e) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if !strings.Contains(e.Error, "m19 and 5 more (status lists them)") || strings.Contains(e.Error, "m20") || len(e.Modules) != 25 {
		t.Errorf("error %q, modules %v", e.Error, e.Modules)
	}
}

// The control socket's call returns, when its caller gives up while the
// loop runs it, only once the loop is done with it: the socket's next
// call (one at a time) is not queued behind a drawing still under way
// (an outside audit: drawings given up on every 30-50 ms were drawn back
// to back, holding the fills 90-145 ms at the median).
func TestAControlCallGivenUpOnHoldsItsTurnUntilTheLoopIsDone(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	d := m.client("ace")
	m.waitState("ace", "web", "applied")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var finished atomic.Bool
	start := time.Now()
	err := d.DoHeld(ctx, func(*nodes.NodeGraph) { time.Sleep(300 * time.Millisecond); finished.Store(true) })
	if err == nil || !finished.Load() {
		t.Errorf("DoHeld returned %v after %v, the call finished: %v; want an error once the call is done", err, time.Since(start), finished.Load())
	}
}

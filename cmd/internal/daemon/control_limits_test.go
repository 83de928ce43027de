package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/control"
)

// The whole graph of a big node is not drawn: the drawing is made on the
// loop, which fills nothing meanwhile (an outside audit: 165,000 nodes,
// 44 MB of DOT, every fill held 3-6 s, the client's memory four times its
// own for minutes). It is refused (413) saying how many nodes and how to
// draw a module's part, which is drawn at any size.
func TestTheWholeGraphOfABigNodeIsNotDrawn(t *testing.T) {
	m := newMesh(t)
	var files []nodes.FileSpec
	templates := map[string]string{}
	for f := range 6 {
		var b strings.Builder
		for i := range 4000 {
			fmt.Fprintf(&b, "${config:k%d_%d}\n", f, i)
		}
		name := fmt.Sprint("t", f)
		files = append(files, nodes.FileSpec{Path: fmt.Sprintf("/etc/big/%d.conf", f), Template: name})
		templates[name] = b.String()
	}
	m.assign("ace", "big", nodes.Plan{Files: files}, templates)
	sock := ctlSock(t)
	d := m.client("ace", withControl(sock))
	m.waitState("ace", "big", "waiting")
	var size int
	d.Do(context.Background(), func(g *nodes.NodeGraph) { size = g.GraphLen() })
	if size <= control.MaxWholeDOT {
		t.Fatalf("the graph has %d nodes, not over %d: the test draws nothing too big", size, control.MaxWholeDOT)
	}
	code, body := ctlGet(t, sock, "/v1/graph.dot")
	var e control.ErrorBody
	if code != http.StatusRequestEntityTooLarge || json.Unmarshal(body, &e) != nil ||
		!strings.Contains(e.Error, fmt.Sprint(size, " nodes")) || !strings.Contains(e.Error, "--module") {
		t.Errorf("the whole graph: %d %s", code, body)
	}
	if code, body := ctlGet(t, sock, "/v1/graph.dot?module=big"); code != http.StatusOK || !strings.Contains(string(body[:min(len(body), 40)]), "digraph") {
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

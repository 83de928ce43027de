package stage

import (
	"reflect"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// A module's requests through a plan change that drops a file: whole when
// they carry every file, not when they carry a changed one; the file the
// node-engine removed is not in the report (SPEC §5.3: the files the
// module has), neither at once nor later.
func TestWholeRequestsAndRemovedFiles(t *testing.T) {
	a, b := value("/etc/a", "A", false), value("/etc/b", "B", false)
	key := []byte("k")
	mo := newModuleOut()
	answer := func(v *nodes.ModuleView, all bool, resp fill.Response) *fill.Request {
		t.Helper()
		req, sent, _ := fillRequest(v, mo, all)
		if req != nil {
			mo.takeFill(v, req, sent, resp, nil, key, nil)
		}
		return req
	}
	view := func(plan string, files ...*nodes.FileValue) *nodes.ModuleView {
		v := &nodes.ModuleView{Name: "web", Plan: plan, State: graph.Ready}
		for _, f := range files {
			v.Files = append(v.Files, ready(f))
		}
		return v
	}
	written := fill.Response{Files: []fill.FileResult{{Path: "/etc/a", Action: "written", Digest: "sha256:a"}}}

	v1 := view("p1", a, b)
	if req := answer(v1, false, written); req == nil || !req.Whole || len(req.Files) != 2 {
		t.Fatalf("first request %+v: want whole, both files", req)
	}
	a2 := value("/etc/a", "A2", false)
	if req := answer(view("p1", a2, b), false, written); req == nil || req.Whole || len(req.Files) != 1 {
		t.Fatalf("a changed value sent %+v: want /etc/a alone, not whole", req)
	}
	v2 := view("p2", a2)
	removed := fill.Response{Files: []fill.FileResult{{Path: "/etc/a", Action: "unchanged", Digest: "sha256:a"},
		{Path: "/etc/b", Action: "removed"}}}
	if req := answer(v2, false, removed); req == nil || !req.Whole || len(req.Files) != 1 {
		t.Fatalf("the plan change sent %+v: want whole, /etc/a", req)
	}
	want := []report.File{{Path: "/etc/a", Action: "written", Digest: "sha256:a"}}
	if r := reportOf(v2, mo); !reflect.DeepEqual(r.Files, want) {
		t.Fatalf("report files %+v, want %+v", r.Files, want)
	}
	if r := reportOf(v2, mo); !reflect.DeepEqual(r.Files, want) {
		t.Fatalf("the next report lists %+v", r.Files)
	}
	if req := answer(v2, false, written); req != nil {
		t.Fatalf("nothing changed, yet %+v was sent", req)
	}

	// A plan that drops every file sends a whole request of none, once.
	if req := answer(view("p3"), false, fill.Response{}); req == nil || !req.Whole || len(req.Files) != 0 {
		t.Fatalf("a plan of no file sent %+v: want a whole request of none", req)
	}
	if req, _, _ := fillRequest(view("p3"), mo, true); req != nil {
		t.Fatalf("the refill of a plan of no file sent %+v again", req)
	}
	// So does a module of no file after a restart of the client (which
	// knows nothing it declared before): its plan may have dropped files
	// while the client was down, and only the node-engine knows them.
	if req, _, _ := fillRequest(view("p9"), newModuleOut(), true); req == nil || !req.Whole || len(req.Files) != 0 {
		t.Fatalf("a module of no file after a restart sent %+v: want a whole request of none", req)
	}
}

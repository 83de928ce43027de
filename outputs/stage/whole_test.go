package stage

import (
	"reflect"
	"slices"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// A module's requests through a plan change that drops a file: whole when
// they carry every file, not when they carry a changed one; the file the
// node-engine removed is reported once.
func TestWholeRequestsAndRemovedFiles(t *testing.T) {
	a, b := value("/etc/a", "A", false), value("/etc/b", "B", false)
	key := []byte("k")
	mo := newModuleOut()
	answer := func(v *nodes.ModuleView, all bool, resp fill.Response) *fill.Request {
		t.Helper()
		req, sent := fillRequest(v, mo, all)
		if req != nil {
			mo.takeFill(v, req, sent, resp, nil, key)
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
	r := reportOf(v2, mo)
	mo.dropRemoved()
	want := []report.File{{Path: "/etc/a", Action: "written", Digest: "sha256:a"}, {Path: "/etc/b", Action: "removed"}}
	if !reflect.DeepEqual(r.Files, want) {
		t.Fatalf("report files %+v, want %+v", r.Files, want)
	}
	if r := reportOf(v2, mo); len(r.Files) != 1 || r.Files[0].Path != "/etc/a" {
		t.Fatalf("the next report still lists %+v", r.Files)
	}
	if req := answer(v2, false, written); req != nil {
		t.Fatalf("nothing changed, yet %+v was sent", req)
	}

	// A plan that drops every file sends a whole request of none; a
	// module of items alone never declared files and sends nothing.
	if req := answer(view("p3"), false, fill.Response{}); req == nil || !req.Whole || len(req.Files) != 0 {
		t.Fatalf("a plan of no file sent %+v: want a whole request of none", req)
	}
	if req, _ := fillRequest(view("p9"), newModuleOut(), true); req != nil {
		t.Fatalf("a module of items alone sent %+v", req)
	}
}

// The reports of one Send list their files on one array kept between
// Sends: each report still lists its own files, one with a file reported
// removed too, whether the array had room for it or not.
func TestTheReportsOfOneSendEachListTheirOwnFiles(t *testing.T) {
	mod := func(name string, paths ...string) (*nodes.ModuleView, *moduleOut) {
		v := &nodes.ModuleView{Name: name, State: graph.Ready}
		mo := newModuleOut()
		for _, p := range paths {
			v.Files = append(v.Files, nodes.FileView{Path: p, State: graph.Ready})
			mo.files[p] = report.File{Path: p, Action: "updated", Digest: "d" + p}
		}
		return v, mo
	}
	va, moa := mod("a", "/a/1", "/a/2")
	moa.files["/a/gone"] = report.File{Path: "/a/gone", Action: fill.ActionRemoved}
	moa.removed = true
	vb, mob := mod("b", "/b/1", "/b/2")
	vc, moc := mod("c", "/c/1")
	s := &Stage{fileBuf: make([]report.File, 0, 3)}
	for range 2 { // the second time on the array the first kept
		out := outBatch{files: s.fileBuf[:0]}
		out.add(va, moa)
		out.add(vb, mob)
		out.add(vc, moc)
		want := [][]string{{"/a/1", "/a/2", "/a/gone"}, {"/b/1", "/b/2"}, {"/c/1"}}
		for i, r := range out.reports {
			var got []string
			for _, f := range r.Files {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, want[i]) {
				t.Errorf("report %d lists %v, want %v", i, got, want[i])
			}
		}
		s.keepFiles(&out)
	}
	if cap(s.fileBuf) < 5 {
		t.Errorf("kept an array of %d files for a Send that listed 5", cap(s.fileBuf))
	}
}

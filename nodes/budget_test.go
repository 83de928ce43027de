package nodes

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// budgetMesh is node ace with module big, files files naming one template
// that writes ${config:v} four times, and module small beside it.
func budgetMesh(t *testing.T, files int) *NodeGraph {
	t.Helper()
	m := NewNodeGraph("ace")
	registryAll(m)
	var p Plan
	for i := range files {
		p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/big/%d", i), Template: "t"})
	}
	m.Put(spec.AssignmentsBucket, "ace.big", planJSON("ace", "big", p))
	m.SetArchive("big", digestA, map[string][]byte{"t": []byte("${config:v}${config:v}${config:v}${config:v}")})
	m.Put(spec.AssignmentsBucket, "ace.small", planJSON("ace", "small", Plan{Files: []FileSpec{{Path: "/etc/small", Template: "s"}}}))
	m.SetArchive("small", digestA, map[string][]byte{"s": []byte("model=${config:model}\n")})
	m.Put(spec.ConfigBucket, "ace.small.model", []byte("opus"))
	return m
}

// A module whose files together would be over what one fill request
// takes (MaxModuleRenderedBytes) fails naming the limit, and renders no
// more than that: a small plan naming one big value from many files
// rendered them all at once, and the client was killed for its memory,
// every module of the node with it. Another module is untouched. Once
// the value shrinks, every file renders and the module is filled.
func TestAModuleWhoseFilesTogetherAreTooLargeFailsAloneAndRendersNoMore(t *testing.T) {
	const files = 64
	m := budgetMesh(t, files)
	value := bytes.Repeat([]byte("x"), 1<<20) // 4 MiB a file: 256 MiB in all
	m.Put(spec.ConfigBucket, "ace.big.v", value)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m.Stabilize()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	v := m.View("big")
	if v.State != graph.Failed || !strings.Contains(v.Reason, "MaxModuleRenderedBytes") {
		t.Fatalf("big: %v %q, want failed naming MaxModuleRenderedBytes", v.State, v.Reason)
	}
	ready := 0
	for _, f := range v.Files {
		if f.State == graph.Ready {
			ready++
		}
	}
	if want := spec.MaxModuleRenderedBytes / (4 << 20); ready != want {
		t.Errorf("%d files of big rendered, want the %d that fit", ready, want)
	}
	if rendered := after.TotalAlloc - before.TotalAlloc; rendered > 2*spec.MaxModuleRenderedBytes {
		t.Errorf("the stabilization allocated %d MiB, want no more than about the module's limit (%d MiB)", rendered>>20, spec.MaxModuleRenderedBytes>>20)
	}
	if s := m.View("small"); s.State != graph.Ready {
		t.Errorf("small: %v %q, want filled as before", s.State, s.Reason)
	}

	m.Put(spec.ConfigBucket, "ace.big.v", []byte("y"))
	m.Stabilize()
	if v := m.View("big"); v.State != graph.Ready || len(v.Files) != files {
		t.Fatalf("big once its value shrank: %v %q (%d files), want every file ready", v.State, v.Reason, len(v.Files))
	}
	if f := file(m, "big", "/etc/big/63"); f.State != graph.Ready {
		t.Errorf("the last file: %+v", f)
	}
}

// A file the budget refused renders again once another file of its module
// shrinks, though none of its own inputs moved.
func TestAFileRefusedForItsModulesSizeRendersOnceThereIsRoom(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.big", planJSON("ace", "big", Plan{Files: []FileSpec{
		{Path: "/etc/a", Template: "a"}, {Path: "/etc/b", Template: "b"}, {Path: "/etc/c", Template: "c"}, {Path: "/etc/d", Template: "d"}, {Path: "/etc/e", Template: "e"},
	}}))
	four := "${config:v}${config:v}${config:v}${config:v}"
	m.SetArchive("big", digestA, map[string][]byte{"a": []byte(four), "b": []byte(four), "c": []byte(four), "d": []byte(four), "e": []byte("${config:w}")})
	m.Put(spec.ConfigBucket, "ace.big.v", bytes.Repeat([]byte("x"), 4<<20)) // 16 MiB a file: a to d fill the budget
	m.Stabilize()                                                           // e waits for w
	m.Put(spec.ConfigBucket, "ace.big.w", []byte("small"))
	m.Stabilize()
	if v := m.View("big"); v.State != graph.Failed || !strings.Contains(v.Reason, "MaxModuleRenderedBytes") {
		t.Fatalf("big: %v %q, want failed naming MaxModuleRenderedBytes", v.State, v.Reason)
	}
	if f := file(m, "big", "/etc/e"); f.State != graph.Failed {
		t.Fatalf("e: %+v, want refused for the module's size", f)
	}
	m.Put(spec.ConfigBucket, "ace.big.v", []byte("x")) // a to d shrink; e's input did not move
	m.Stabilize()
	if v := m.View("big"); v.State != graph.Ready {
		t.Fatalf("big once there is room: %v %q", v.State, v.Reason)
	}
}

package stage

import (
	"errors"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// Said.FailedSince is when the fill's failure said began: a fill failing
// the same way keeps it, one failing otherwise moves it, one that
// succeeds clears it (and the next failure begins anew).
func TestAFillFailureIsSaidSinceItBegan(t *testing.T) {
	pub := value("/etc/a", "plain", false)
	v := &nodes.ModuleView{Name: "web", State: graph.Ready, Files: []nodes.FileView{ready(pub)}}
	sent := map[string]*nodes.FileValue{"/etc/a": pub}
	req := &fill.Request{Module: "web", Files: []fill.File{wire(pub)}}
	s := &Stage{modules: map[string]*moduleOut{"web": newModuleOut()}}
	mo := s.modules["web"]
	since := func() Said { said, _ := s.Said("web"); return said }

	began := time.Now()
	mo.takeFill(v, req, sent, fill.Response{}, errors.New("fill socket: down"), nil, nil)
	if got := since(); got.Failure != "fill socket: down" || got.FailedSince.Before(began) {
		t.Fatalf("after a failed fill begun at %v: %+v", began, got)
	}
	mo.failedAt = began.Add(-time.Hour) // as if it began an hour ago
	first := since()
	mo.takeFill(v, req, sent, fill.Response{}, errors.New("fill socket: down"), nil, nil)
	if got := since(); !got.FailedSince.Equal(first.FailedSince) {
		t.Errorf("the same failure again moved its since: %v, was %v", got.FailedSince, first.FailedSince)
	}
	mo.takeFill(v, req, sent, fill.Response{}, errors.New("fill socket: 500 full disk"), nil, nil)
	moved := since()
	if moved.FailedSince.Before(began) {
		t.Errorf("another failure is said since %v, the first began %v", moved.FailedSince, first.FailedSince)
	}
	mo.takeFill(v, req, sent, fill.Response{Files: []fill.FileResult{{Path: "/etc/a", Action: "created", Digest: "sha256:aa"}}}, nil, nil, nil)
	if got := since(); got.Failure != "" || !got.FailedSince.IsZero() {
		t.Errorf("after a fill that succeeded: %+v", got)
	}
	again := time.Now()
	mo.takeFill(v, req, sent, fill.Response{}, errors.New("fill socket: 500 full disk"), nil, nil)
	if got := since(); got.FailedSince.Before(again) {
		t.Errorf("a failure after a success is said since %v, before it began (%v)", got.FailedSince, again)
	}
}

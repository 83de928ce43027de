package stage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/fill"
)

// manyModules is a real node graph of node n1 with n modules m00…, each
// one templated file reading its own config value.
func manyModules(t *testing.T, n int) *nodes.NodeGraph {
	t.Helper()
	m := registered()
	digest := "sha256:" + strings.Repeat("b", 64)
	for i := range n {
		mod := fmt.Sprintf("m%02d", i)
		plan, _ := json.Marshal(nodes.Assignment{Node: "n1", Module: mod, Provisioning: nodes.Plan{
			Templates: nodes.TemplatesRef{Ref: "file:///t/m.tar", Digest: digest},
			Files:     []nodes.FileSpec{{Path: "/etc/" + mod + ".conf", Template: "conf", Form: fill.FormOwned}},
		}})
		if err := m.Put(spec.AssignmentsBucket, "n1."+mod, plan).Refused; err != nil {
			t.Fatal(err)
		}
		m.SetArchive(mod, digest, map[string][]byte{"conf": []byte("name=${config:name}\n")})
		m.Put(spec.ConfigBucket, "n1."+mod+".name", []byte("value-of-"+mod))
	}
	m.Stabilize()
	return m
}

// A fill is made only when a worker is free for it or soon will be: the
// modules past twice MaxFillsInFlight (in flight, and as many queued)
// wait with no request made and their files' bytes let go, and each is
// made (rendered again) and sent once a worker came back, with the bytes
// its value sums.
func TestAFillWaitingForAWorkerHoldsNoBytesAndGoesOnceOneIsFree(t *testing.T) {
	const n = 2*MaxFillsInFlight + 4
	r := newRig(t)
	ctx := context.Background()
	m := manyModules(t, n)
	r.s.Send(ctx, m, m.Modules(), true)
	bustest.Eventually(t, 10*time.Second, func() error {
		if got := len(r.fills); got < MaxFillsInFlight {
			return fmt.Errorf("%d fill requests so far", got)
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond) // nothing more may come: not a timing of the stage
	if got := r.fillCount(); got != MaxFillsInFlight {
		t.Fatalf("%d fill requests with none back, want %d (one per worker)", got, MaxFillsInFlight)
	}
	if got := len(r.s.queued); got != MaxFillsInFlight {
		t.Fatalf("%d fills made and queued for the workers, want %d", got, MaxFillsInFlight)
	}
	held, deferred := 0, 0
	for _, mod := range m.Modules() {
		if m.View(mod).Files[0].Value.Held() {
			held++
		}
	}
	deferred = len(r.s.deferred)
	if held != 0 || deferred != n-2*MaxFillsInFlight {
		t.Fatalf("%d values hold their bytes and %d fills wait, want none and %d", held, deferred, n-2*MaxFillsInFlight)
	}
	if !r.s.Pending() {
		t.Fatal("fills waiting for a worker, and the stage says nothing is pending")
	}
	again := m.Renders().Again.Load()
	r.send(ctx, m, nil, false) // the loop takes each back, then sends what waits
	if got := r.fillCount(); got != n-MaxFillsInFlight {
		t.Fatalf("%d more fill requests once the workers came back, want %d", got, n-MaxFillsInFlight)
	}
	if d := m.Renders().Again.Load() - again; d != n-2*MaxFillsInFlight {
		t.Fatalf("%d files rendered again for their requests, want %d", d, n-2*MaxFillsInFlight)
	}
	for _, mod := range m.Modules() {
		if got, want := r.onDisk("/etc/"+mod+".conf"), "name=value-of-"+mod+"\n"; got != want {
			t.Errorf("%s: %q on disk, want %q", mod, got, want)
		}
		if st, _ := r.s.Said(mod); st.State != "applied" {
			t.Errorf("%s reported %q, want applied", mod, st.State)
		}
	}
	if r.s.Pending() {
		t.Fatal("all filled and reported, and the stage says output is pending")
	}
}

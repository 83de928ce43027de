package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/report"
)

// A member of an R3 cluster started again lags behind its stream while it
// catches up. A start's sweep whose read lands on it must not take the
// older report it still holds for the last one written: the new client's
// report equal to that older one would never be put, and the bucket would
// keep the newer one (a "failed" while the file is fine) for good.
func TestASweepAfterAMemberRestartReadsTheLastReportWritten(t *testing.T) {
	c := bustest.StartCluster(t, 3)
	nc, js := c.Connect(t)
	ctx := context.Background()
	c.KV(t, js, spec.NeedsBucket)
	c.KV(t, js, spec.CollectBucket)
	kv := c.KV(t, js, spec.AppliedBucket)
	const modules = 20
	reportOf := func(m int, state, at string) []byte {
		return fmt.Appendf(nil, `{"node":"ace","module":"m%d","state":"%s","at":"%s"}`, m, state, at)
	}
	for m := range modules {
		bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), reportOf(m, "applied", "2026-01-01T00:00:00Z"))
	}
	c.MissedByAMember(t, js, spec.AppliedBucket, func() {
		for m := range modules {
			bustest.PutEventually(t, kv, fmt.Sprintf("ace.m%d", m), reportOf(m, "failed", "2026-01-01T00:00:09Z"))
		}
	})
	// Sweeps one after another while it catches up, as clients starting
	// then would: each reads through a consumer placed on any member.
	read, unread := 0, 0
	for try := 0; read < 30; try++ {
		if try == 300 {
			t.Fatalf("%d of %d sweeps read the applied bucket", read, try)
		}
		p := &report.Publisher{NC: nc, JS: js, Node: "ace", Now: time.Now, Caught: bus.AwaitReplicas}
		sw, err := p.Sweep(ctx, func(string) bool { return true })
		if !slices.Contains(sw.Read, spec.AppliedBucket) {
			// Not read this time: the error says which replica lags.
			if err == nil || !strings.Contains(err.Error(), "entries behind its leader") {
				t.Fatalf("try %d: the applied bucket not read, and the error says %v", try, err)
			}
			unread++
			continue
		}
		read++
		for m := range modules {
			if at := sw.At[fmt.Sprintf("m%d", m)]; at != "2026-01-01T00:00:09Z" {
				t.Fatalf("try %d: m%d's report read was written at %q (%d reports read), not the last one written (at 09)", try, m, at, len(sw.At))
			}
		}
	}
	t.Logf("%d sweeps read the last reports; %d found a replica catching up and did not read", read, unread)
}

package server

import (
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestTheSweepAnswersDespiteALongWhy: one need whose why is nearly a payload long: the sweep still
// answers, within the payload, the why cut.
func TestTheSweepAnswersDespiteALongWhy(t *testing.T) {
	s := bustest.Start(t, func(o *natsd.Options) { o.MaxPayload = 8192 })
	nc, js := bustest.JetStream(t, s)
	ensure(t, js)
	needs := bucket(t, js, spec.NeedsBucket)
	putNeed(t, needs, "ace", "m", "config", "k", "failed", strings.Repeat("w", 8000))
	putNeed(t, needs, "ace", "m", "config", "k2", "failed", "short")
	serveQuery(t, nc, js)
	m, err := nc.Request(spec.QuerySubject, []byte(`{"what":"sweep"}`), 3*time.Second)
	if err != nil {
		t.Fatalf("sweep: %v (one need's long why leaves the whole mesh without a sweep)", err)
	}
	if int64(len(m.Data)) > nc.MaxPayload() {
		t.Fatalf("reply of %d bytes", len(m.Data))
	}
	r, err := AskSweep(testCtx(t), nc, "", "", "")
	if err != nil || len(r.Findings) != 2 || !strings.Contains(r.Findings[0].Why+r.Findings[1].Why, "(cut: 8000 bytes in all)") {
		t.Fatalf("sweep %v: %+v", err, r.Findings)
	}
	for _, f := range r.Findings {
		if len(f.Needs) != 1 || f.NeedsLeftOut != 0 {
			t.Errorf("finding %q names %d needs and leaves %d out; want its one need named", f.Name, len(f.Needs), f.NeedsLeftOut)
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/cmd/internal/server"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// TestASweepHoldsAModuleWhoseReportIsOutOfShape: node z's one module
// assigned with a plan wrote a report the server cannot read. The sweep
// counts it as a module (with its report out of shape), exits 1 once the
// report has stood longer than --stood-after, and does not say that no
// module is assigned to z: before, it printed "modules 0", exited 0 and
// said on stderr "no module with a provisioning plan is assigned to node
// z". A node whose module is assigned without a plan is still told so.
func TestASweepHoldsAModuleWhoseReportIsOutOfShape(t *testing.T) {
	url := sweepMesh(t, true, func(b sweepBuckets) {
		b.put(b.assignments, "z.solo", map[string]any{"provisioning": map[string]any{}})
		b.put(b.applied, "z.solo", "garbage")
		b.put(b.assignments, "bare.web", map[string]any{"node": "bare", "module": "web"})
	})
	time.Sleep(1100 * time.Millisecond) // the report written over 1s ago

	code, out, errs := runSweep("--nats", url, "--node", "z", "--stood-after", "1s")
	t.Logf("--node z --stood-after 1s: exit %d\n%s%s", code, out, errs)
	if code != 1 {
		t.Errorf("a module whose report is out of shape for over --stood-after: exit %d, want 1", code)
	}
	if want := "modules 1: 0 applied, 0 waiting, 0 failed, 1 with its report out of shape (named above), 1 of them for over 1s"; !strings.Contains(out, want) {
		t.Errorf("the summary does not say %q", want)
	}
	if strings.Contains(errs, "no module") {
		t.Errorf("the sweep says on stderr that no module is assigned to z: %s", errs)
	}

	code, out, errs = runSweep("--nats", url, "--node", "z")
	if code != 0 || !strings.Contains(out, "modules 1:") {
		t.Errorf("within the default stood-after: exit %d, want 0, the module counted:\n%s%s", code, out, errs)
	}

	code, _, errs = runSweep("--nats", url, "--node", "bare")
	if code != 0 || !strings.Contains(errs, "mesh-provisioner sweep: no module with a provisioning plan is assigned to node bare\n") {
		t.Errorf("--node bare (assigned without a plan): exit %d, stderr %q", code, errs)
	}
}

// TestASweepWithoutTheAssignmentsSaysNothingOfPlans: with the controller's
// assignments bucket not made yet, no module is known assigned, with a
// plan or without; the sweep says the bucket is missing and does not
// claim on stderr that no module with a plan is assigned to the node
// named (it said so whenever every count was zero).
func TestASweepWithoutTheAssignmentsSaysNothingOfPlans(t *testing.T) {
	s := bustest.Start(t)
	nc, js := bustest.JetStream(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := server.EnsureBuckets(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	stop, err := server.ServeQuery(context.Background(), nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runSweep("--nats", s.ClientURL(), "--node", "z")
	t.Logf("exit %d\n%s%s", code, out, errs)
	if !strings.Contains(out, "missing bucket "+spec.AssignmentsBucket) || strings.Contains(errs, "provisioning plan") {
		t.Errorf("without the assignments bucket: stdout %q, stderr %q; want the bucket said missing, and no word of plans", out, errs)
	}
}

package server

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Without the controller's assignments bucket the sweep judges no orphan
// and no module without a report: the text says so, instead of reading
// "judged as empty" (as if every key were an orphan, and none is listed).
func TestWriteSweepSaysWhatAMissingAssignmentsBucketLeavesUnjudged(t *testing.T) {
	r := SweepReply{At: "2026-01-02T10:00:00Z", StoodAfter: "10m0s",
		MissingBuckets: []string{spec.AssignmentsBucket, spec.CollectBucket}}
	var b strings.Builder
	WriteSweep(&b, r)
	t.Logf("WriteSweep:\n%s", b.String())
	for _, want := range []string{
		"\nmissing buckets (judged as empty): " + spec.CollectBucket + "\n",
		"\nmissing bucket " + spec.AssignmentsBucket + ": no module is known assigned, so orphans and modules without a report are not judged\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no line %q in\n%s", strings.TrimSpace(want), b.String())
		}
	}
}

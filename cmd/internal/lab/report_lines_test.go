package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The lab prints a line for each report written to the applied bucket. A
// key there out of shape (SPEC §2.1), or a value that leaves out its node
// and module, printed "report:  : " (the value's empty names): a tester
// trying keys out of shape in the lab saw a blank report. The names are
// the key's, and a key out of shape is said as such, never as a report.
func TestTheLabsReportLineNamesTheKeyAndSaysAKeyOutOfShape(t *testing.T) {
	s := bustest.Start(t)
	_, js := bustest.JetStream(t, s)
	kv := bustest.Bucket(t, js, spec.AppliedBucket)
	ctx := context.Background()
	r := newReports(nil, time.Now())
	line := func(key, value string) (string, error) {
		t.Helper()
		if _, err := kv.PutString(ctx, key, value); err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.apply(e)
		if err != nil || rep == nil {
			return "", err
		}
		return describe(rep, nil), nil
	}

	if got, err := line("ace.web", `{"state":"applied","files":[]}`); err != nil || got != "ace web: applied" {
		t.Errorf("a report without node and module: line %q (%v), want %q", got, err, "ace web: applied")
	}
	if got, err := line("a=2Eb.c=3Ad", `{"state":"waiting"}`); err != nil || got != "a.b c:d: waiting" {
		t.Errorf("a report of encoded names: line %q (%v), want %q", got, err, "a.b c:d: waiting")
	}
	for _, key := range []string{"zz.mod.extra", "zz.m=41", "zz.bad=4"} {
		got, err := line(key, `{}`)
		if got != "" || err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "out of shape") {
			t.Errorf("key %s out of shape: line %q, error %v; want no line and an error naming the key out of shape", key, got, err)
		}
	}
}

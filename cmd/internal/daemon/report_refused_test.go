package daemon

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
	"github.com/novox/mesh-provisioner/outputs/stage"
)

// A client whose bus user is refused the applied bucket's lookup (its
// rights narrowed by mistake: a permission violation on
// $JS.API.STREAM.INFO.KV_mesh-provisioner_applied) is told at once why
// its reports are not written: "not permitted to write
// mesh-provisioner_applied", heard from the bus's refusal
// (report.Publisher's Lookup is bus.LookupKV). Before, the publisher's
// lookup waited out nats.go's request timeout (5 s) in the daemon's loop,
// at every retry, and the report's failure said no more than a timeout.
// The files are filled all the same, at once: a refused bucket counts as
// read back (TestAnAppliedBucketRefusedDoesNotHoldTheFirstFill).
func TestAReportRefusedItsBucketSaysNotPermitted(t *testing.T) {
	m := exampleBus(t)
	m.changeRights("provisioner-ace", "$JS.API.STREAM.INFO.KV_"+spec.AppliedBucket)
	m.webModule()
	m.client("ace", asUser("provisioner-ace"))
	const want = "not permitted to write " + spec.AppliedBucket
	bustest.Eventually(t, stage.ReadBackWait+60*time.Second, func() error {
		for _, line := range strings.Split(m.logs.String(), "\n") {
			if strings.Contains(line, "report not written") && strings.Contains(line, want) {
				return nil
			}
		}
		return fmt.Errorf("no report failure saying %q in the log:\n%s", want, m.logs.String())
	})
	m.waitFile("/etc/web/a.conf", "model = opus\nport = 8080\n")
}

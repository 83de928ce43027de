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

// A client whose bus user is refused its applied bucket can never read
// back what the last run left there: the bucket refused counts as read
// (as a missing one does), so the first fill does not wait
// stage.ReadBackWait (30 s) for it. The files reach mesh-fill well within
// that, and the report's failure still says "not permitted to write".
// Before, the first fill waited the whole 30 s for a read-back that could
// never come. Each case refuses one step of the read: the bucket's lookup
// (its stream info), and the read of its keys (the watch's consumer).
func TestAnAppliedBucketRefusedDoesNotHoldTheFirstFill(t *testing.T) {
	for _, c := range []struct {
		name string
		deny []string
	}{
		{"lookup", []string{"$JS.API.STREAM.INFO.KV_" + spec.AppliedBucket}},
		{"read", []string{"$JS.API.CONSUMER.CREATE.KV_" + spec.AppliedBucket, "$JS.API.CONSUMER.CREATE.KV_" + spec.AppliedBucket + ".>"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := exampleBus(t)
			m.changeRights("provisioner-ace", c.deny...)
			m.webModule()
			m.client("ace", asUser("provisioner-ace"))
			// Well under ReadBackWait, and robust under load.
			m.waitFileFor("/etc/web/a.conf", "model = opus\nport = 8080\n", stage.ReadBackWait/2)
			if c.name != "lookup" {
				return
			}
			const want = "not permitted to write " + spec.AppliedBucket
			bustest.Eventually(t, 30*time.Second, func() error {
				for _, line := range strings.Split(m.logs.String(), "\n") {
					if strings.Contains(line, "report not written") && strings.Contains(line, want) {
						return nil
					}
				}
				return fmt.Errorf("no report failure saying %q in the log:\n%s", want, m.logs.String())
			})
		})
	}
}

package nodes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.1: a rendered file over 16 MiB is refused with a reason that
// names the limit. A collection whose text is over it (33 items of
// 512 KiB) fails its collector saying so: the limit by name and size, not
// "over the limit of 16777216 bytes (over a limit)", which named neither.
func TestACollectionOverTheRenderedLimitFailsItsCollectorNamingTheLimit(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.zsh", collectorPlan("ace", "zsh", "C"))
	m.SetArchive("zsh", digestA, map[string][]byte{"t": []byte("${collected:C}")})
	for i := range 33 {
		c := fmt.Sprintf("m%02d", i)
		m.Put(spec.AssignmentsBucket, spec.EncodeKey("ace", c), planJSON("ace", c, Plan{Items: []ItemSpec{{Collection: "C", Template: "i"}}}))
		m.SetArchive(c, digestA, map[string][]byte{"i": []byte(strings.Repeat("x", spec.MaxItemBytes))})
	}
	m.Stabilize()
	v := m.View("zsh")
	for _, say := range []string{"collection C", "33 items", "16 MiB", "MaxRenderedBytes"} {
		if v.State != graph.Failed || !strings.Contains(v.Reason, say) {
			t.Fatalf("the collector: %v %q, want failed saying %q", v.State, v.Reason, say)
		}
	}
	var need *NeedView
	for i, n := range v.Needs {
		if n.Kind == "collected" {
			need = &v.Needs[i]
		}
	}
	if need == nil || need.State != graph.Failed || !strings.Contains(need.Why, "MaxRenderedBytes") {
		t.Errorf("the need: %+v, want failed naming MaxRenderedBytes", need)
	}
}

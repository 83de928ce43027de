package nodes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A template named by many files (or items) is checked once: its fault is
// said once in the module's reason, not once per file naming it. (Checked
// per file, a plan of 10,000 files naming one template of 4,096
// placeholders held the client's loop for hours, and its reason repeated
// every fault 10,000 times.)
func TestAPlaceholderFaultIsSaidOnceHoweverManyFilesNameItsTemplate(t *testing.T) {
	m := NewNodeGraph("ace")
	registryAll(m)
	p := Plan{Secrets: []SecretSpec{{Name: "api"}}, Collections: []CollectionSpec{{Name: "c", Comment: "#"}}}
	for i := range 5 {
		p.Files = append(p.Files, FileSpec{Path: fmt.Sprintf("/etc/x/%d", i), Template: "t"})
		p.Items = append(p.Items, ItemSpec{Collection: fmt.Sprintf("c%d", i), Template: "i"})
	}
	m.Put(spec.AssignmentsBucket, "ace.x", planJSON("ace", "x", p))
	m.SetArchive("x", digestA, map[string][]byte{
		"t": []byte("${secret:api} ${secret:nope} ${collected:c} ${collected:d}"),
		"i": []byte("${secret:api}"),
	})
	m.Stabilize()
	v := m.View("x")
	if v.State != graph.Failed {
		t.Fatalf("%v %q, want failed", v.State, v.Reason)
	}
	for _, want := range []string{
		"t:1:15: ${secret:nope} names no secret of the plan",
		"t:1:45: ${collected:d} names collection d which collections[] does not list",
		"i:1:1: an item names ${secret:api}",
	} {
		if n := strings.Count(v.Reason, want); n != 1 {
			t.Errorf("the reason says %q %d times, want once: %q", want, n, v.Reason)
		}
	}
	if strings.Contains(v.Reason, "${secret:api} names") || strings.Contains(v.Reason, "${collected:c} names") {
		t.Errorf("the reason refuses a placeholder the plan holds: %q", v.Reason)
	}
}

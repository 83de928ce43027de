package daemon

import (
	"fmt"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.4: a collection whose items depend on itself is a cycle, and
// every module ON it fails with the cycle named. A collector of that
// collection is not on it: its collection is the items recorded (the
// cycle's item fails and is not), so it is filled with the others and
// applied, as when an item fails for naming a secret.
func TestACollectorOffACycleIsFilledWithTheItemsNotOnIt(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "self", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c1", Template: "i"}},
		Collections: []nodes.CollectionSpec{{Name: "c1", Comment: "#"}}}, map[string]string{"i": "x${collected:c1}"})
	m.assign("ace", "alpha", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c1", Template: "i"}}},
		map[string]string{"i": "a1\n"})
	m.assign("ace", "reader", nodes.Plan{
		Files:       []nodes.FileSpec{{Path: "/etc/reader", Template: "rc"}},
		Collections: []nodes.CollectionSpec{{Name: "c1", Comment: "//"}},
	}, map[string]string{"rc": "${collected:c1}"})
	m.client("ace")

	r := m.waitState("ace", "self", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "collection cycle: c1 → item self/c1 → c1") {
		t.Errorf("self's reason %q: want the cycle named", why)
	}
	m.waitFile("/etc/reader", "// alpha\na1\n")
	m.waitState("ace", "reader", "applied")
	m.waitValue(spec.CollectBucket, spec.EncodeKey("ace", "c1", "alpha"), itemJSON("c1", "alpha", "a1\n"))
	if v, ok := m.get(spec.CollectBucket, spec.EncodeKey("ace", "c1", "self")); ok {
		t.Errorf("the cycle's item was recorded: %s", v)
	}

	// The cycle broken: self's item comes in.
	m.assign("ace", "self", nodes.Plan{Items: []nodes.ItemSpec{{Collection: "c1", Template: "i"}}},
		map[string]string{"i": "s1\n"})
	m.waitFile("/etc/reader", "// alpha\na1\n// self\ns1\n")
	m.waitState("ace", "self", "applied")
}

package nodes

import (
	"fmt"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A collection with 1,000 contributors and 5 collectors: one item changes.
// Reports the files and items rendered per change (target: 5 files, 1
// item); the time is dominated by assembling the collection's text.
func BenchmarkOneItemChangeInACollectionOf1000(b *testing.B) {
	m := collectionOf1000(b)
	files, items := m.Renders().Files.Load(), m.Renders().Items.Load()
	b.ReportAllocs()
	ops := 0
	for b.Loop() {
		ops++
		m.Put(spec.ConfigBucket, "ace.contrib-0500.v", []byte(fmt.Sprint(ops)))
		m.Stabilize()
	}
	n := float64(ops)
	b.ReportMetric(float64(m.Renders().Files.Load()-files)/n, "files/op")
	b.ReportMetric(float64(m.Renders().Items.Load()-items)/n, "items/op")
}

// One contributor added to (and taken again from) that collection: each
// op is one stabilization; the collectors render once each (5 files) and
// the new item once.
func BenchmarkOneItemAddedToACollectionOf1000(b *testing.B) {
	m := collectionOf1000(b)
	files, items := m.Renders().Files.Load(), m.Renders().Items.Load()
	ops := 0
	for b.Loop() {
		ops++
		if ops%2 == 1 {
			m.Put(spec.AssignmentsBucket, "ace.newcomer", planJSON("ace", "newcomer", Plan{Items: []ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}}))
			m.SetArchive("newcomer", digestA, map[string][]byte{"i": []byte("alias newcomer=true\n")})
		} else {
			m.Delete(spec.AssignmentsBucket, "ace.newcomer")
		}
		m.Stabilize()
	}
	n := float64(ops)
	b.ReportMetric(float64(m.Renders().Files.Load()-files)/n, "files/op")
	b.ReportMetric(float64(m.Renders().Items.Load()-items)/n, "items/op")
}

func collectionOf1000(b *testing.B) *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	for i := 0; i < 1000; i++ {
		mod := fmt.Sprintf("contrib-%04d", i)
		m.Put(spec.AssignmentsBucket, "ace."+mod, planJSON("ace", mod, Plan{Items: []ItemSpec{{Collection: "shell:zsh:normal", Template: "i"}}}))
		m.SetArchive(mod, digestA, map[string][]byte{"i": []byte("export " + mod + "=${config:v}\nalias " + mod + "='run " + mod + "'\n")})
		m.Put(spec.ConfigBucket, "ace."+mod+".v", []byte("0"))
	}
	for i := 0; i < 5; i++ {
		mod := fmt.Sprint("collector-", i)
		m.Put(spec.AssignmentsBucket, "ace."+mod, collectorPlan("ace", mod, "shell:zsh:normal"))
		m.SetArchive(mod, digestA, map[string][]byte{"t": []byte("# zshrc of " + mod + "\n${shell:zsh:normal}")})
	}
	m.Stabilize()
	if v := m.View("collector-0"); len(v.Files) != 1 || v.Files[0].Value == nil || len(v.Files[0].Value.mustBytes()) < 50000 {
		b.Fatalf("collector not rendered: %+v", v.Files)
	}
	return m
}

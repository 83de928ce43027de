package report

import (
	"bytes"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// The mesh fails an item whose record the bus cannot hold before it is
// handed over (nodes/itemrecord.go), measuring it as nodes encodes it: the
// publisher must record the very same bytes.
func TestAnItemIsRecordedAsTheMeshMeasuresIt(t *testing.T) {
	for _, text := range []string{"", "alias a=b\n", "<a&b>\x01\b\f\t\"\\\u2028é", "plain"} {
		got := encode(Item{Collection: "shell:zsh:normal", Contributor: "zsh", Item: text})
		want := nodes.EncodeItemRecord(nodes.ItemRecord{Collection: "shell:zsh:normal", Contributor: "zsh", Item: text})
		if !bytes.Equal(got, want) {
			t.Errorf("item %q: publisher writes %s, the mesh measures %s", text, got, want)
		}
	}
}

package daemon

import (
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The consumers list is in the byte order of the assignments' keys as the
// bucket holds them (SPEC §4.5), encoded: "ace-1.m" ('-' 0x2D) comes before
// "ace.m" ('.' 0x2E), which comes before "ace=2Ex.m" ('=' 0x3D, node
// "ace.x") and "ace_1.m" ('_' 0x5F); "Zed" (upper case) before all of them.
func TestConsumersAreInTheByteOrderOfTheEncodedKeys(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "gitea", giteaPlan(), giteaTemplates)
	nodesIn := []string{"ace_1", "ace.x", "ace", "ace-1", "Zed"}
	v := m.devVault()
	for _, n := range nodesIn {
		m.put(spec.AssignmentsBucket, spec.EncodeKey(n, "m"), `{"provisioning":{"provisions":[{"provision":"gitea-read","provider":"gitea","credential":"token"}]}}`)
		v.Set(t.Context(), pair(n, "m", ""), []byte("v-"+n))
	}
	m.client("ace")
	m.waitConsumers("/etc/gitea/consumers.json",
		pair("Zed", "m", ""), pair("ace-1", "m", ""), pair("ace", "m", ""), pair("ace.x", "m", ""), pair("ace_1", "m", ""))
}

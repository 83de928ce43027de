package nodes

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// An item that is not UTF-8 text fails its module, and the reason says
// where the bytes come from: the item's template itself (a Latin-1 file,
// at its line), or the value of the placeholder that holds them. It said
// "a value it names holds other bytes" for both, and sent the operator of
// a Latin-1 template to look for a value that is not there.
func TestAnItemThatIsNotUTF8SaysWhetherItsTemplateOrAValueHoldsTheBytes(t *testing.T) {
	for _, c := range []struct {
		name, tmpl, value string
		say, notSay       string
	}{
		{"template", "alias a=b\n${config:k}caf\xe9\n", "v", "template i is not UTF-8 text at line 2", "a value"},
		{"first line", "caf\xe9\n${config:k}\n", "v", "template i is not UTF-8 text at line 1", "a value"},
		{"lines after a value", "${config:k}\nok\nb\xffd\n", "v", "template i is not UTF-8 text at line 3", "a value"},
		{"value", "alias a=b\nx=${config:k}\n", "caf\xe9", "the value of ${config:k} is not UTF-8 text", "template i is not"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewNodeGraph("ace")
			registryAll(m)
			m.Put(spec.ConfigBucket, "ace.a.k", []byte(c.value))
			m.Put(spec.AssignmentsBucket, "ace.a", planJSON("ace", "a", Plan{Items: []ItemSpec{{Collection: "c1", Template: "i"}}}))
			m.SetArchive("a", digestA, map[string][]byte{"i": []byte(c.tmpl)})
			m.Stabilize()
			v := m.View("a")
			if v.State != graph.Failed || !strings.Contains(v.Reason, "collection c1") ||
				!strings.Contains(v.Reason, c.say) || strings.Contains(v.Reason, c.notSay) {
				t.Fatalf("%v %q, want failed naming the collection and saying %q (not %q)", v.State, v.Reason, c.say, c.notSay)
			}
		})
	}
}

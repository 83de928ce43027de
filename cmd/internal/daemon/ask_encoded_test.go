package daemon

import (
	"slices"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// prov.ask and prov.changed with names that are no key tokens (SPEC §2.1,
// §5.4): the tool runner asks on prov.ask.<encoded node> with the module
// and key as they are named (a.b, x=y, shell:zsh), and is answered the
// value stored at <node>.<module>.<key> encoded, an empty one as "";
// an encoded spelling is another name. prov.changed's subject carries
// the node and module encoded, its payload the key as named; a put of the
// same value says nothing.
func TestProvAskAndChangedNameKeysAsTheyAreNotEncoded(t *testing.T) {
	m := newMesh(t)
	const node, module = "ace.lab", "team.app"
	for k, v := range map[string]string{"a.b": "dot", "x=y": "eq", "shell:zsh": "colon", "empty": ""} {
		m.put(spec.ConfigBucket, spec.EncodeKey(node, module, k), v)
	}
	p, tm := oneFile("team", "v = ${config:a.b}\n")
	m.assign(node, module, p, tm)
	sub, _ := m.nc.SubscribeSync("prov.changed.>")
	m.nc.Flush()
	m.client(node)
	m.waitState(node, module, "applied")
	if msg, err := sub.NextMsg(5 * time.Second); err != nil || msg.Subject != "prov.changed.ace=2Elab.team=2Eapp" || string(msg.Data) != `{"kind":"config"}` {
		t.Fatalf("start event %s (%v)", msgData(msg), err)
	}
	subject := spec.AskSubject(node)
	if subject != "prov.ask.ace=2Elab" {
		t.Fatalf("ask subject %s", subject)
	}
	for body, want := range map[string]string{
		`{"module":"team.app","kind":"config","key":"a.b"}`:       `{"value":"dot"}`,
		`{"module":"team.app","kind":"config","key":"x=y"}`:       `{"value":"eq"}`,
		`{"module":"team.app","kind":"config","key":"shell:zsh"}`: `{"value":"colon"}`,
		`{"module":"team.app","kind":"config","key":"empty"}`:     `{"value":""}`,
		`{"module":"team.app","kind":"config","key":"a=2Eb"}`:     `{"error":"no config value a=2Eb is resolved for module team.app"}`,
		`{"module":"team=2Eapp","kind":"config","key":"a.b"}`:     `{"error":"module team=2Eapp is not assigned to node ace.lab"}`,
	} {
		msg, err := m.nc.Request(subject, []byte(body), 5*time.Second)
		if err != nil || string(msg.Data) != want {
			t.Errorf("%s: answered %s (%v), want %s", body, msgData(msg), err, want)
		}
	}
	m.put(spec.ConfigBucket, spec.EncodeKey(node, module, "a.b"), "dot") // the same value
	m.put(spec.ConfigBucket, spec.EncodeKey(node, module, "x=y"), "eq2")
	m.assign(node, "b:c", nodes.Plan{}, nil)
	// Two watches (config, assignments) bring the two: in either order.
	want := []string{
		`prov.changed.ace=2Elab.b=3Ac {"kind":"config"}`,
		`prov.changed.ace=2Elab.team=2Eapp {"key":"x=y","kind":"config"}`,
	}
	var got []string
	for range want {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("events %v, then %v; want %v", got, err, want)
		}
		got = append(got, msgData(msg))
	}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

package daemon

import (
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes"
)

// A managed-keys template whose secret stands where a line's key is (the
// whole line, or before its first "="): the key the node-engine reads is
// then the secret or part of it, and mesh-fill keeps keys in its state
// directory and names them in its conflicts and log (rule 5: a secret
// reaches no file other than the one meant to hold it, no log line). The
// file fails naming the placeholder, never the value, as a line break in
// one does; a secret after the "=" is written.
func TestASecretWhereAManagedKeysLineHasItsKeyFailsAndReachesNoStateDir(t *testing.T) {
	const key = "LEAK-CANARY-kk33"
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "c", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/c.env", Template: "t", Form: "managed-keys"}},
		Secrets: []nodes.SecretSpec{{Name: "line"}},
	}, map[string]string{"t": "${secret:line}\n"})
	m.assign("ace", "d", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/d.env", Template: "t", Form: "managed-keys"}},
		Secrets: []nodes.SecretSpec{{Name: "k"}},
	}, map[string]string{"t": "PREFIX_${secret:k} = 1\nok = ${secret:k}\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/c/line", []byte(key+"=value"))
	v.Set(t.Context(), "own/d/k", []byte(key))
	m.webModule()
	m.client("ace", f.socket)
	for _, mod := range []string{"c", "d"} {
		r := m.waitState("ace", mod, "failed")
		if why, _ := r["reason"].(string); !contains(why, "${secret:") || contains(why, "LEAK-CANARY") {
			t.Errorf("%s: reason %q does not name the placeholder, or shows the value", mod, why)
		}
	}
	m.waitState("ace", "web", "applied")
	m.settle()
	if st := stateDirText(t, f.state); strings.Contains(st, "LEAK-CANARY") {
		t.Errorf("mesh-fill's state directory holds part of the secret:\n%s", st)
	}
	for where, text := range map[string]string{"mesh-fill's log": f.log.String(), "the client's log": m.logs.String()} {
		if strings.Contains(text, "LEAK-CANARY") {
			t.Errorf("%s holds part of the secret:\n%s", where, text)
		}
	}
	for k, s := range m.everyBucket(t.Context()) {
		if strings.Contains(s, "LEAK-CANARY") {
			t.Errorf("bucket %s holds part of the secret: %s", k, s)
		}
	}
	// Where a value stands, it is written.
	m.assign("ace", "d", nodes.Plan{
		Files:   []nodes.FileSpec{{Path: "/etc/d.env", Template: "t", Form: "managed-keys"}},
		Secrets: []nodes.SecretSpec{{Name: "k"}},
	}, map[string]string{"t": "ok = ${secret:k}\nk2=a=${secret:k}\n"})
	m.waitFile("/etc/d.env", "ok = "+key+"\nk2=a="+key+"\n")
	m.waitState("ace", "d", "applied")
}

package nodes

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/graph"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// keysRig is a module whose one file, /etc/k.env, is managed-keys,
// rendered from tpl with secrets k (value "v") and blank (value "  ").
func keysRig(t testing.TB, tpl string) *NodeGraph {
	m := NewNodeGraph("ace")
	registryAll(m)
	m.Put(spec.AssignmentsBucket, "ace.k", planJSON("ace", "k", Plan{
		Files:   []FileSpec{{Path: "/etc/k.env", Template: "t", Form: FormManagedKeys}},
		Secrets: []SecretSpec{{Name: "k"}, {Name: "blank"}},
	}))
	m.SetArchive("k", digestA, map[string][]byte{"t": []byte(tpl)})
	m.SetSecret("own/k/k", []byte("v"), time.Time{})
	m.SetSecret("own/k/blank", []byte("  "), time.Time{})
	m.Stabilize()
	return m
}

// A secret where a managed-keys line has its key fails the file, on
// whichever line it stands; one on a line's value side, on a comment
// line, or blank, is written.
func TestASecretIsRefusedWhereAManagedKeysLineHasItsKeyOnAnyLine(t *testing.T) {
	for tpl, keyed := range map[string]bool{
		"${secret:k}\n":                           true,
		"PREFIX_${secret:k} = 1\n":                true,
		"a=1\n${secret:k}=2\n":                    true,
		"a=${secret:k}\n${secret:k}=2\n":          true,
		"a=${secret:k}${secret:k}\nb${secret:k}":  true,
		"ok = ${secret:k}\nk2=a=${secret:k}\n":    false,
		"# ${secret:k}\n; ${secret:k}=1\n":        false,
		"a=${secret:k}${secret:k}\nb=${secret:k}": false,
		"${secret:blank}=x\n":                     false,
	} {
		v := file(keysRig(t, tpl), "k", "/etc/k.env")
		switch {
		case keyed && (v.State != graph.Failed || !strings.Contains(v.Why, "stands where a line's key is")):
			t.Errorf("%q: %v %q, want refused for a secret where a key is", tpl, v.State, v.Why)
		case !keyed && v.State != graph.Ready:
			t.Errorf("%q: %v %q, want written", tpl, v.State, v.Why)
		}
	}
}

// A managed-keys file of 4,096 secrets on one 16 MiB line, rendered again:
// each secret's line was read anew (64 GiB at a render). Before the fix
// 13.5 s/op here (the client's loop held at each change); after, 0.1 s/op.
func BenchmarkKeyedSecretOneLongLine(b *testing.B) {
	m := keysRig(b, "k="+strings.Repeat("${secret:k}", spec.MaxPlaceholders))
	vals := [][]byte{bytes.Repeat([]byte("x"), 4000), bytes.Repeat([]byte("y"), 4000)}
	i := 0
	for b.Loop() {
		i++
		m.SetSecret("own/k/k", vals[i%2], time.Time{})
		m.Stabilize()
	}
	if v := file(m, "k", "/etc/k.env"); v.State != graph.Ready {
		b.Fatalf("%v %q", v.State, v.Why)
	}
}

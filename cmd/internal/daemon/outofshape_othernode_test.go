package daemon

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Every client reads the whole assignments bucket (SPEC §2.2), so a key
// out of shape there (§2.1) under another node was a warning on every
// client of the mesh, at every re-read, as another node's broken plan
// once was: it is its own node's client's to warn of (the others say it
// at debug level). A key under this node, or one whose node token is
// itself out of shape (no one can tell whose it is), is still a warning.
func TestAnAssignmentKeyOutOfShapeUnderAnotherNodeIsNoWarningHere(t *testing.T) {
	m := newMesh(t)
	m.webModule()
	m.put(spec.AssignmentsBucket, "g14.m=41", `{"provisioning":{}}`)
	m.put(spec.AssignmentsBucket, "g14.a.b", `{"provisioning":{}}`)
	m.put(spec.AssignmentsBucket, "ace.m=41", `{"provisioning":{}}`)
	m.put(spec.AssignmentsBucket, "=67=31=34.x", `{"provisioning":{}}`)
	m.client("ace")
	m.waitState("ace", "web", "applied")
	m.settle()

	level := map[string]string{} // key → the level it was logged at
	sc := bufio.NewScanner(strings.NewReader(m.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Level, Key, Bucket string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Bucket == spec.AssignmentsBucket && l.Key != "" {
			if level[l.Key] != "warn" {
				level[l.Key] = l.Level
			}
		}
	}
	for key, want := range map[string]string{
		"g14.m=41": "debug", "g14.a.b": "debug", "ace.m=41": "warn", "=67=31=34.x": "warn",
	} {
		if level[key] != want {
			t.Errorf("assignments key %s logged at %q, want %q", key, level[key], want)
		}
	}
}

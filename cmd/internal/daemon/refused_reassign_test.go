package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// A module failed for a secret the vault refused is asked again as soon as
// its assignment is written again, the same plan or another, not after the
// refused retry (10 minutes): the vault judges an ask by the assignments,
// and an operator who fixed what it refused for re-puts the assignment.
// Until then the refusal stands.
func TestARefusedSecretIsAskedAgainWhenItsModulesAssignmentIsWrittenAgain(t *testing.T) {
	m := newMesh(t)
	plan := nodes.Plan{Files: []nodes.FileSpec{owned("/etc/sec.conf", "k", "")}, Secrets: []nodes.SecretSpec{{Name: "api-key"}}}
	tmpl := map[string]string{"k": "key = ${secret:api-key}\n"}
	m.assign("ace", "sec", plan, tmpl)
	v, _ := m.reconnectingVault()
	v.Set(t.Context(), "own/sec/api-key", []byte("k-1"))
	v.Refuse("own/sec/api-key", "not for you yet")
	m.client("ace")
	r := m.waitState("ace", "sec", "failed")
	if why := fmt.Sprint(r["reason"]); !contains(why, "not for you yet") {
		t.Fatalf("sec failed with %q, want the vault's reason", why)
	}
	asked := v.AskCount("own/sec/api-key")
	v.Refuse("own/sec/api-key", "") // the vault would answer now

	time.Sleep(300 * time.Millisecond)
	if n := v.AskCount("own/sec/api-key"); n != asked {
		t.Fatalf("asked %d times more before the assignment was written again, want the refusal to stand", n-asked)
	}
	m.assign("ace", "sec", plan, tmpl) // the same plan, written again
	m.waitState("ace", "sec", "applied")
	m.waitFile("/etc/sec.conf", "key = k-1\n")
	bustest.Eventually(t, 5*time.Second, func() error {
		if !contains(m.logs.String(), "the vault asked again for what it refused") {
			return fmt.Errorf("no log line says the refusal was asked again")
		}
		return nil
	})
}

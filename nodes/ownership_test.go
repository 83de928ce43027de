package nodes

import (
	"strings"
	"testing"
)

// An owner or group longer than a user or group name may be (256 bytes,
// what mesh-fill takes) is refused with the plan, naming the entry and the
// limit, not at every fill (mesh-fill: 400, its text withheld when the
// request carries a secret).
func TestAnOwnerOrGroupTooLongIsRefusedWithThePlan(t *testing.T) {
	long := strings.Repeat("u", 257)
	for _, p := range []Plan{
		{Secrets: []SecretSpec{{Name: "k", Path: "/etc/k", Owner: long}}},
		{Secrets: []SecretSpec{{Name: "k", Path: "/etc/k", Group: long}}},
	} {
		_, err := ParseAssignment("ace.cc", planJSON("ace", "cc", p))
		if err == nil || !strings.Contains(err.Error(), "secrets[0] (k): ") || !strings.Contains(err.Error(), "257 bytes") || !strings.Contains(err.Error(), "at most 256") {
			t.Errorf("got %v, want it refused naming the entry and the limit", err)
		}
	}
	ok := strings.Repeat("u", 256)
	if _, err := ParseAssignment("ace.cc", planJSON("ace", "cc", Plan{Secrets: []SecretSpec{{Name: "k", Path: "/etc/k", Owner: ok, Group: ok}}})); err != nil {
		t.Fatal(err)
	}
}

package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"

	"github.com/novox/mesh-provisioner/nodes"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// SPEC §4.3/§5.3: a file's digest is of its bytes on disk after the fill,
// keyed (hmac-sha256) for a file holding a secret. A seed is written only
// when absent: once there, a rotated secret renders new bytes that the
// node-engine keeps out ("kept", nothing on disk moved), so the report's
// digest and the report itself stay as they were, not a digest of bytes
// that are on no disk, rewritten and published at every rotation.
func TestASeedHoldingASecretKeptAfterARotationRewritesNoReport(t *testing.T) {
	m := newMesh(t)
	m.assign("ace", "app", nodes.Plan{
		Secrets: []nodes.SecretSpec{{Name: "token"}},
		Files:   []nodes.FileSpec{{Path: "/etc/app/seed.env", Template: "s", Form: nodes.FormSeed}},
	}, map[string]string{"s": "TOKEN=${secret:token}\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/app/token", []byte("t-1"))
	m.client("ace")
	m.waitFile("/etc/app/seed.env", "TOKEN=t-1\n")
	before := reportDigests(m.waitState("ace", "app", "applied"))
	m.settle()
	rev := m.revision(spec.AppliedBucket, "ace.app")

	from := m.fills.count()
	v.Set(t.Context(), "own/app/token", []byte("t-2"))
	bustest.Eventually(t, 10*time.Second, func() error { // the rotation's fill, answered
		if m.fills.count() <= from {
			return fmt.Errorf("no fill since the rotation")
		}
		return nil
	})
	m.settle()
	if got, _, _ := m.file("/etc/app/seed.env"); got != "TOKEN=t-1\n" {
		t.Fatalf("the seed was rewritten: %q", got)
	}
	r, _ := m.report("ace", "app")
	if after := reportDigests(r); after["/etc/app/seed.env"] != before["/etc/app/seed.env"] {
		t.Errorf("the seed's digest moved though nothing on disk did: %q → %q", before["/etc/app/seed.env"], after["/etc/app/seed.env"])
	}
	if got := m.revision(spec.AppliedBucket, "ace.app"); got != rev {
		t.Errorf("the report was rewritten (revision %d → %d): %v", rev, got, r)
	}
}

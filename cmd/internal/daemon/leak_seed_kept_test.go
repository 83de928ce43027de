package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes"
)

// A seed is kept as it is on disk, whatever the plan renders now: a seed
// whose template named a secret when it was written, and a secret's own
// path that the plan turns into a seed, still hold the secret after the
// plan drops it. The report's digest of a kept seed is of what is on
// disk, so it must be keyed (SPEC §5.3: no report is an oracle for a
// secret), though the file the plan renders now holds none.
func TestAKeptSeedThatStillHoldsASecretTheNewPlanDropsIsNoOracle(t *testing.T) {
	const (
		inTemplate = "LEAK-CANARY-5eed-1111"
		ownPath    = "LEAK-CANARY-5eed-2222"
	)
	m := newMesh(t)
	m.assign("ace", "a", nodes.Plan{
		Secrets: []nodes.SecretSpec{{Name: "tok"}},
		Files:   []nodes.FileSpec{{Path: "/etc/a/seed.env", Template: "s", Form: nodes.FormSeed}},
	}, map[string]string{"s": "TOKEN=${secret:tok}\n"})
	m.assign("ace", "b", nodes.Plan{
		Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/etc/b/tok"}},
	}, nil)
	v := m.devVault()
	v.Set(t.Context(), "own/a/tok", []byte(inTemplate))
	v.Set(t.Context(), "own/b/tok", []byte(ownPath))
	m.client("ace")
	m.waitFile("/etc/a/seed.env", "TOKEN="+inTemplate+"\n")
	m.waitFile("/etc/b/tok", ownPath)
	m.waitState("ace", "a", "applied")
	m.waitState("ace", "b", "applied")

	// The plans drop the secrets from the files: each is a seed of plain text now.
	m.assign("ace", "a", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/a/seed.env", Template: "s", Form: nodes.FormSeed}},
	}, map[string]string{"s": "TOKEN=none\n"})
	m.assign("ace", "b", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/b/tok", Template: "s", Form: nodes.FormSeed}},
	}, map[string]string{"s": "plain\n"})
	oracle := map[string]string{}
	for _, f := range []struct{ module, path, text string }{
		{"a", "/etc/a/seed.env", "TOKEN=" + inTemplate + "\n"}, {"b", "/etc/b/tok", ownPath}} {
		sum := sha256.Sum256([]byte(f.text))
		oracle[f.path] = "sha256:" + hex.EncodeToString(sum[:])
		bustest.Eventually(t, 10*time.Second, func() error {
			r, _ := m.report("ace", f.module)
			d := reportDigests(r)[f.path]
			if r["state"] != "applied" || d == "" || !strings.Contains(fmt.Sprint(r["files"]), "kept") {
				return fmt.Errorf("%s: report %v: the new plan's seed not answered kept yet", f.module, r)
			}
			if got, _, _ := m.file(f.path); got != f.text {
				return fmt.Errorf("%s is %q: the seed was not kept", f.path, got)
			}
			if d == oracle[f.path] || !strings.HasPrefix(d, "hmac-sha256:") {
				return fmt.Errorf("%s's report says digest %q for the kept seed %s holding a secret, want it keyed", f.module, d, f.path)
			}
			return nil
		})
	}
	m.settle()
	for k, s := range m.everyBucket(t.Context()) {
		for p, o := range oracle {
			if strings.Contains(s, strings.TrimPrefix(o, "sha256:")) {
				t.Errorf("bucket %s holds the plain sha256 of %s, which holds a secret", k, p)
			}
		}
	}
}

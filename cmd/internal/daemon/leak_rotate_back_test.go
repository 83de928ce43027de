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

// A secret rotated and rotated back to its old value, with refill ticks
// between: every report of every file holding it (its own path, an owned
// template, a managed-keys merge, a managed block beside another
// module's) says a keyed digest at each step, and none says the plain
// sha256 of any of the files' contents on disk at any step. The file two
// modules' blocks share is one file on disk: both reports say the same
// digest of it (the node-engine's, keyed), not one of the file and one
// of the block sent, which moved only with the block.
func TestASecretRotatedBackToAnOldValueIsKeyedInEveryReport(t *testing.T) {
	const (
		first  = "LEAK-CANARY-r07a-0001"
		second = "LEAK-CANARY-r07a-0002"
	)
	m := newMesh(t)
	f := m.stateFill()
	m.assign("ace", "s", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/s/conf", Template: "o"},
			{Path: "/etc/s/keys.env", Template: "k", Form: nodes.FormManagedKeys},
			{Path: "/etc/s/shared.conf", Template: "b", Form: nodes.FormManagedBlock}},
		Secrets: []nodes.SecretSpec{{Name: "tok", Path: "/etc/s/tok"}},
	}, map[string]string{"o": "tok = ${secret:tok}\n", "k": "TOKEN=${secret:tok}\n", "b": "tok = ${secret:tok}\n"})
	m.assign("ace", "other", nodes.Plan{
		Files: []nodes.FileSpec{{Path: "/etc/s/shared.conf", Template: "b", Form: nodes.FormManagedBlock}},
	}, map[string]string{"b": "plain = 1\n"})
	v := m.devVault()
	v.Set(t.Context(), "own/s/tok", []byte(first))
	m.client("ace", f.socket, refillEvery(200*time.Millisecond))
	paths := []string{"/etc/s/tok", "/etc/s/conf", "/etc/s/keys.env", "/etc/s/shared.conf"}
	plain := map[string]bool{}
	seen := map[string]string{} // what each report said, step by step
	step := func(value string) {
		t.Helper()
		bustest.Eventually(t, 10*time.Second, func() error {
			for _, p := range paths {
				text, _, err := m.file(p)
				if err != nil || !strings.Contains(text, value) {
					return fmt.Errorf("%s does not hold the value yet: %q", p, text)
				}
			}
			return nil
		})
		for _, p := range paths {
			text, _, _ := m.file(p)
			sum := sha256.Sum256([]byte(text))
			plain[hex.EncodeToString(sum[:])] = true
		}
		time.Sleep(500 * time.Millisecond) // refill ticks
		var shared map[string]string
		bustest.Eventually(t, 10*time.Second, func() error {
			shared = map[string]string{}
			for _, mod := range []string{"s", "other"} {
				r := m.waitState("ace", mod, "applied")
				shared[mod] = reportDigests(r)["/etc/s/shared.conf"]
			}
			if shared["s"] != shared["other"] {
				return fmt.Errorf("the modules sharing /etc/s/shared.conf report different digests of it: s %s, other %s", shared["s"], shared["other"])
			}
			return nil
		})
		m.settle()
		for _, mod := range []string{"s", "other"} {
			r := m.waitState("ace", mod, "applied")
			for p, d := range reportDigests(r) {
				if !strings.HasPrefix(d, "hmac-sha256:") {
					t.Errorf("%s's report says %q for %s holding the secret (value %s)", mod, d, p, value)
				}
				seen[mod+" "+p] += d + " "
			}
		}
	}
	step(first)
	v.Set(t.Context(), "own/s/tok", []byte(second))
	step(second)
	v.Set(t.Context(), "own/s/tok", []byte(first))
	step(first)
	for k, s := range m.everyBucket(t.Context()) {
		for o := range plain {
			if strings.Contains(s, o) {
				t.Errorf("bucket %s holds the plain sha256 of a file holding the secret", k)
			}
		}
		if strings.Contains(s, "LEAK-CANARY") {
			t.Errorf("bucket %s holds the secret", k)
		}
	}
	if strings.Contains(f.log.String(), "LEAK-CANARY") || strings.Contains(m.logs.String(), "LEAK-CANARY") {
		t.Error("a log holds the secret")
	}
	if t.Failed() {
		t.Logf("digests: %v", seen)
	}
}

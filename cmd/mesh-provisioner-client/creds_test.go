package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/novox/mesh-provisioner/inputs/bus/auth"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// A creds file that cannot work is named before anything starts, with
// what is wrong with it, and run exits non-zero.
func TestRunRefusesABadCredsFileNamingIt(t *testing.T) {
	dir := t.TempDir()
	op, err := auth.NewOperator("test")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := spec.RightsOf(spec.RoleClient, "ace", nil)
	creds, err := op.Creds(r, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	expired := filepath.Join(dir, "expired.creds")
	malformed := filepath.Join(dir, "malformed.creds")
	for p, b := range map[string][]byte{expired: creds, malformed: []byte("-----BEGIN NATS USER JWT-----\nnope\n------END NATS USER JWT------\n")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, says string }{
		{filepath.Join(dir, "none.creds"), "missing"},
		{dir, "unreadable"},
		{malformed, "malformed"},
		{expired, "expired"},
	} {
		code, _, stderr := runCLI("run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", "--creds", c.path)
		if code == 0 || !strings.Contains(stderr, c.path) || !strings.Contains(stderr, c.says) {
			t.Errorf("--creds %s: exit %d, stderr %q; want non-zero, the path and %q", c.path, code, stderr, c.says)
		}
	}
}

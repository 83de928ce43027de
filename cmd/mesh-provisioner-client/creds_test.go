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
	r14, _ := spec.RightsOf(spec.RoleClient, "g14", nil)
	g14creds, err := op.Creds(r14, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	expired := filepath.Join(dir, "expired.creds")
	malformed := filepath.Join(dir, "malformed.creds")
	g14 := filepath.Join(dir, "g14.creds") // a unit copied from g14
	for p, b := range map[string][]byte{expired: creds, g14: g14creds,
		malformed: []byte("-----BEGIN NATS USER JWT-----\nnope\n------END NATS USER JWT------\n")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, says string }{
		{filepath.Join(dir, "none.creds"), "missing"},
		{dir, "unreadable"},
		{malformed, "malformed"},
		{expired, "expired"},
		{g14, "is for user provisioner-g14, who may not hear replies on _INBOX.provisioner.ace.>"},
	} {
		code, _, stderr := runCLI("run", "--node", "ace", "--nats", "nats://127.0.0.1:1", "--control", "", "--creds", c.path)
		if code == 0 || !strings.Contains(stderr, c.path) || !strings.Contains(stderr, c.says) {
			t.Errorf("--creds %s: exit %d, stderr %q; want non-zero, the path and %q", c.path, code, stderr, c.says)
		}
	}
}

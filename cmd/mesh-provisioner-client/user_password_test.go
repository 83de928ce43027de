package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/cmd/internal/cli"
	"github.com/novox/mesh-provisioner/inputs/bus/auth/authtest"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A --user with no password (no --password-file, no $MESH_NATS_PASSWORD,
// or an empty file) is a start error, exit 2, saying so: it connected
// with an empty password and exited 1 with only the bus's "Authorization
// Violation" (an outside audit).
func TestRunRefusesAUserWithNoPassword(t *testing.T) {
	s := bustest.Run(t, authtest.ConfigOptions(t, "../../examples/nats/server.conf"))
	t.Setenv(cli.PasswordEnv, "")
	empty := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--password-file", empty}} {
		args := append([]string{"run", "--node", "ace", "--nats", s.ClientURL(), "--user", "provisioner-ace",
			"--control", "", "--state-dir", t.TempDir()}, extra...)
		code, _, errs := runCLIWithin(t, args...)
		want := "run: --user provisioner-ace has no password: give --password-file F (its first line the password) or set $MESH_NATS_PASSWORD"
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", extra, code, errs, want)
		}
	}
}

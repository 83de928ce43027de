package main

import (
	"strings"
	"testing"
)

// SPEC §7 writes `mesh-provisioner-client run --node ace --nats nats://… [--creds F] …`:
// --nats is no optional flag, as --node is none. A run without it is a
// usage error (exit 2) that says so: before, the client took
// nats://127.0.0.1:4222 and waited there for ever, a node's unit that
// lost the flag never saying what it lacked.
func TestRunWithoutNATSSaysItIsRequired(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--node", "ace", "--control", "", "--state-dir", t.TempDir()},
		{"run", "--node", "ace", "--nats", "", "--control", "", "--state-dir", t.TempDir()},
	} {
		code, stdout, stderr := runCLIWithin(t, args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "run: --nats is required") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and \"run: --nats is required\"", args, code, stdout, stderr)
		}
	}
}

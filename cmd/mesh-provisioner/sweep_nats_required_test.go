package main

import (
	"bytes"
	"strings"
	"testing"
)

// SPEC §7 writes `mesh-provisioner sweep --nats … [--creds F] …`: --nats
// is no optional flag, as it is none for serve. A sweep without it is a
// usage error (exit 2) that says so, and asks no bus: before, it swept
// whatever answered on 127.0.0.1:4222 (a lab, another mesh's bus) and a
// cron job missing the flag reported on the wrong mesh.
func TestASweepWithoutNATSSaysItIsRequired(t *testing.T) {
	for _, args := range [][]string{{"sweep"}, {"sweep", "--node", "ace", "--json"}, {"sweep", "--nats", ""}} {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "mesh-provisioner sweep: --nats is required") ||
			strings.Contains(stderr.String(), "127.0.0.1:4222") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and \"--nats is required\"", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
}

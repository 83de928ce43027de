package main

import (
	"strings"
	"testing"
)

// An --inbox that is no subject prefix (a space, a wildcard, an empty
// token) is a usage error naming the flag, before the bus is asked: it
// was "asking mesh-provisioner.provisioning for a sweep: nats: invalid
// subject", which names neither the flag nor the value.
func TestSweepRefusesAnInboxThatIsNoSubjectPrefix(t *testing.T) {
	for _, in := range []string{"bad inbox", "_INBOX.*", "_INBOX.>", "_INBOX..x", "_INBOX.", "tab\there"} {
		code, out, errs := runSweep("--nats", "nats://127.0.0.1:1", "--inbox", in)
		if code != 2 || out != "" || !strings.Contains(errs, "--inbox") || strings.Contains(errs, "connecting") {
			t.Errorf("--inbox %q: exit %d, stdout %q, stderr %q; want 2 naming --inbox before connecting", in, code, out, errs)
		}
	}
	// the inbox the operator's creds hear passes the check (and then finds no bus)
	if code, _, errs := runSweep("--nats", "nats://127.0.0.1:1", "--inbox", "_INBOX.mesh-operator"); code != 2 || !strings.Contains(errs, "connecting") {
		t.Errorf("--inbox _INBOX.mesh-operator: exit %d, stderr %q; want it to get as far as connecting", code, errs)
	}
}

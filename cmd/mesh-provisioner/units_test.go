package main

import (
	"bytes"
	"testing"

	"github.com/novox/mesh-provisioner/examples"
)

// TestTheExampleUnitsFlagsAreTheServers: every flag the example unit
// (examples/systemd/mesh-provisioner.service) hands `mesh-provisioner
// serve` is one of its flags with a value it takes (parsed up to a -h put
// after them: an unknown flag or a bad value would exit 2 first), so an
// operator installing the unit does not get a server that exits 2 at
// every start.
func TestTheExampleUnitsFlagsAreTheServers(t *testing.T) {
	args, err := examples.UnitArgs("mesh-provisioner.service")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("the unit runs %q, not serve", args)
	}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "-h"), &stdout, &stderr); code != 0 {
		t.Errorf("mesh-provisioner %q: exit %d, stderr %q", args, code, stderr.String())
	}
	if err := checkMetricsAddr(flagValue(args, "--metrics")); err != nil {
		t.Errorf("the unit's --metrics: %v", err)
	}
}

// flagValue is the value args give flag ("" when none).
func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

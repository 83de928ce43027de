package main

import (
	"bytes"
	"testing"

	"github.com/novox/mesh-provisioner/examples"
)

// TestTheExampleUnitsFlagsAreTheClients: every flag the example unit
// (examples/systemd/mesh-provisioner-client.service) hands
// `mesh-provisioner-client run` is one of its flags with a value it takes
// (parsed up to a -h put after them: an unknown flag or a bad value would
// exit 2 first), so an operator installing the unit does not get a client
// that exits 2 at every start.
func TestTheExampleUnitsFlagsAreTheClients(t *testing.T) {
	args, err := examples.UnitArgs("mesh-provisioner-client.service")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the unit runs %q, not run", args)
	}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "-h"), &stdout, &stderr); code != 0 {
		t.Errorf("mesh-provisioner-client %q: exit %d, stderr %q", args, code, stderr.String())
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/novox/mesh-provisioner/examples"
)

// TestTheExampleUnitsFlagsAreMeshFills: every flag the example unit
// (examples/systemd/mesh-fill.service) hands `mesh-fill serve` is one of
// its flags with a value it takes (parsed up to a -h put after them: an
// unknown flag or a bad value would fail first), so an operator
// installing the unit does not get a fill server that exits 2 at every
// start.
func TestTheExampleUnitsFlagsAreMeshFills(t *testing.T) {
	args, err := examples.UnitArgs("mesh-fill.service")
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("the unit runs %q, not serve", args)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), append(args, "-h"), &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("mesh-fill %q: %v, stderr %q", args, err, stderr.String())
	}
}

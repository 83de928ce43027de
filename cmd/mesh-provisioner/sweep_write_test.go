package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// fullDisk is a stdout that takes nothing: a redirect to a full disk.
type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A sweep whose output cannot be written was not delivered: SPEC §6.2's
// exit 2 (the sweep could not be made), saying why on stderr. Before, a
// CI step's `sweep --json > sweep.json` on a full disk exited 0 (nothing
// held back) with an empty file, and a cron job took that for a clean
// mesh.
func TestASweepItCannotPrintExitsTwo(t *testing.T) {
	url := mesh(t)
	for _, args := range [][]string{{"--nats", url, "--node", "h"}, {"--nats", url, "--node", "h", "--json"}} {
		var stderr bytes.Buffer
		code := run(append([]string{"sweep"}, args...), fullDisk{}, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "mesh-provisioner sweep: writing the sweep: no space left on device") {
			t.Errorf("%q to a full disk: exit %d, stderr %q; want 2 and the write's error", args, code, stderr.String())
		}
	}
	// Written, it exits as the sweep says (node h holds nothing back).
	if code, _, errs := runSweep("--nats", url, "--node", "h", "--json"); code != 0 {
		t.Errorf("node h: exit %d, stderr %q", code, errs)
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// An operator's first sweep, with no bus where --nats points (or none
// given, and none on the default 127.0.0.1:4222): the error says what is
// wrong and what to do, not only nats.go's "no servers available".
func TestSweepNoBusSaysWhatToDo(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", bustest.FreePort(t))
	code, out, errs := runSweep("--nats", url)
	if code != 2 || out != "" {
		t.Fatalf("exit %d, stdout %q; want 2 and nothing on stdout", code, out)
	}
	for _, want := range []string{url, "nothing answers there", "--nats"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q: want it to say %q", errs, want)
		}
	}
}

package lab

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A lab started with --keep on what an earlier lab left settles as a fresh
// one does: its clients find the files and reports as they left them, so
// a module that did not change writes no new report (SPEC §5.3); the
// lab must not wait for one until --settle runs out and say the example
// mesh did not settle.
func TestAKeptLabSettlesOnWhatTheLastOneLeft(t *testing.T) {
	dir := labDir(t)
	for _, keep := range []bool{false, true} {
		var out bustest.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := Run(ctx, Config{Dir: dir, Port: 0, Once: true, Keep: keep, Settle: 30 * time.Second, Out: &out, Log: zerolog.Nop()})
		cancel()
		if err != nil {
			t.Fatalf("keep %v: %v\noutput:\n%s", keep, err, out.String())
		}
	}
}

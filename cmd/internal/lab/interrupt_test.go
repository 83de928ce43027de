package lab

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// TestACtrlCWhileStartingIsNoError: a Ctrl-C before the mesh is up (here,
// as soon as the bus is) stops the lab as one after: "stopping", no error
// (exit 0); with Once it did not settle, and says so.
func TestACtrlCWhileStartingIsNoError(t *testing.T) {
	for _, once := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bustest.Buffer
		err := Run(ctx, Config{Dir: labDir(t), Port: 0, Once: once, Out: &out, Log: zerolog.Nop(),
			OnBus: func(string, string) { cancel() }})
		cancel()
		if once {
			if !errors.Is(err, ErrNotSettled) || !strings.Contains(err.Error(), "stopped before it did") {
				t.Errorf("once: interrupted while starting: %v, want %v: stopped before it did", err, ErrNotSettled)
			}
		} else if err != nil {
			t.Errorf("interrupted while starting: %v, want no error", err)
		}
		if !strings.HasSuffix(out.String(), "\nstopping\n") {
			t.Errorf("once=%v: the lab did not say it stopped:\n%s", once, out.String())
		}
	}
}

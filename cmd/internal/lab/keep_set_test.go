package lab

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// The README's tour sets the value grafana waits for; a lab started again
// with --keep keeps the bus, and that value with it, so grafana applies.
// The lab waited for it to wait all the same, until --settle ran out, and
// --once said the example mesh did not settle (exit 1). It now expects
// grafana applied when the config bucket holds its value.
func TestAKeptLabWhoseWaitingValueWasSetSettlesWithItApplied(t *testing.T) {
	dir := labDir(t)
	var first bustest.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Dir: dir, Settle: 30 * time.Second, Out: &first, Log: zerolog.Nop(),
			OnSettled: func(url, creds string) {
				nc, err := nats.Connect(url, nats.UserCredentials(creds))
				if err != nil {
					t.Error(err)
					return
				}
				defer nc.Close()
				js, _ := jetstream.New(nc)
				kv, err := js.KeyValue(ctx, spec.ConfigBucket)
				if err == nil {
					_, err = kv.PutString(ctx, spec.EncodeKey(WaitingNode, WaitingModule, WaitingConfig), "smtp.mesh.internal")
				}
				if err != nil {
					t.Error(err)
				}
			}})
	}()
	bustest.Eventually(t, 60*time.Second, func() error {
		if !strings.Contains(first.String(), "report: g14 grafana: applied") {
			return errAwaiting("grafana applied in the first lab")
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("the first lab: %v\n%s", err, first.String())
	}

	var out bustest.Buffer
	ctx2, cancel2 := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel2()
	err := Run(ctx2, Config{Dir: dir, Once: true, Keep: true, Settle: 20 * time.Second, Out: &out, Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("the kept lab: %v\n%s", err, out.String())
	}
	if !regexp.MustCompile(`(?m)^g14\s+grafana\s+applied\s+/etc/grafana/grafana.ini$`).MatchString(out.String()) {
		t.Errorf("the kept lab's table does not say grafana applied:\n%s", out.String())
	}
}

type errAwaiting string

func (e errAwaiting) Error() string { return "waiting for " + string(e) }

// A kept lab keeps programs.log, and printed every line an earlier lab had
// written to it as "program: restart …" of its own, though its files were
// unchanged and it restarted nothing: it shows only the lines written
// while it runs.
func TestAKeptLabShowsOnlyTheRestartsItRan(t *testing.T) {
	dir := labDir(t)
	for _, keep := range []bool{false, true} {
		var out bustest.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		err := Run(ctx, Config{Dir: dir, Once: true, Keep: keep, Settle: 30 * time.Second, Out: &out, Log: zerolog.Nop()})
		cancel()
		if err != nil {
			t.Fatalf("keep %v: %v\n%s", keep, err, out.String())
		}
		n := strings.Count(out.String(), "  program: ")
		if !keep && n == 0 {
			t.Fatalf("the first lab shows no restart:\n%s", out.String())
		}
		if keep && n != 0 {
			t.Errorf("the kept lab, whose files were all there, shows %d restarts:\n%s", n, out.String())
		}
	}
}

package bus

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
)

// A bucket lookup that fails otherwise than "not found" (here: the bus has
// no JetStream yet) is tried again no later than Recheck (SPEC §2.2: a
// bucket not there yet is looked for at least every 5 s), however many
// times it failed, and the watch starts once the bucket is there.
func TestALookupFailingOtherwiseIsTriedAgainWithinRecheck(t *testing.T) {
	s := bustest.Start(t, func(o *server.Options) { o.JetStream = false })
	js := newJS(t, connect(t, Options{URL: s.ClientURL()}))
	const recheck = 200 * time.Millisecond
	logs := &bustest.Buffer{}
	out := make(chan Update, 16)
	w := NewWatch(js, "later", ">", out, zerolog.New(logs).Level(zerolog.WarnLevel))
	w.Recheck = recheck
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	const failures = 4 // past the backoff's third doubling
	var waits []time.Duration
	bustest.Eventually(t, 60*time.Second, func() error {
		waits = lookupWaits(t, logs.String())
		if len(waits) < failures {
			return fmt.Errorf("%d lookups failed, want %d", len(waits), failures)
		}
		return nil
	})
	for i, d := range waits {
		if d > recheck {
			t.Fatalf("failed lookup %d is tried again in %v, after Recheck (%v)", i+1, d, recheck)
		}
	}

	if err := s.EnableJetStream(&server.JetStreamConfig{StoreDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	kv := createBucket(t, js, "later")
	put(t, kv, "k", "v")
	for {
		u := next(t, out, 30*time.Second)
		if u.Snapshot {
			m := mirror{}
			m.apply(u)
			for m.String() != "k=v" {
				m.apply(next(t, out, 5*time.Second))
			}
			return
		}
	}
}

// lookupWaits is the retry_in of each "cannot look up bucket" warning.
func lookupWaits(t *testing.T, logs string) []time.Duration {
	t.Helper()
	var waits []time.Duration
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg     string  `json:"message"`
			RetryIn float64 `json:"retry_in"`
		}
		if line == "" || json.Unmarshal([]byte(line), &l) != nil || l.Msg != "cannot look up bucket" {
			continue
		}
		waits = append(waits, time.Duration(l.RetryIn*float64(time.Millisecond)))
	}
	return waits
}

// The waits after failed lookups: the restarts' start, doubling up to
// Recheck (5 s by default), never the restarts' 30 s.
func TestLookupBackoffStartsAsTheRestartsAndStopsAtRecheck(t *testing.T) {
	for _, c := range []struct {
		recheck time.Duration
		want    []time.Duration
	}{
		{DefaultRecheck, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{200 * time.Millisecond, []time.Duration{200 * time.Millisecond, 200 * time.Millisecond}},
	} {
		b := lookupBackoff(c.recheck)
		for i, want := range c.want {
			if got := b.Next(i); got != want {
				t.Errorf("recheck %v: wait %d is %v, want %v", c.recheck, i+1, got, want)
			}
		}
		if got := b.Next(1 << 20); got != c.recheck {
			t.Errorf("recheck %v: a long run of failures waits %v, want %v", c.recheck, got, c.recheck)
		}
	}
}

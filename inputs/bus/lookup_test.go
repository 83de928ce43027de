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
	w := NewWatch(js, "later", ">", out, zerolog.New(logs).Level(zerolog.DebugLevel)) // each failure: the same one again is a debug line (lookupFailures)
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

// lookupWaits is the retry_in of each "cannot look up bucket" line.
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

// A bucket whose lookups fail while the bus is away is said once as a
// warning, then again only when the failure says something else or
// lookupSayEvery after (with how many went unsaid), and its lookup working
// again is said once: not a warning every 5 s for every bucket.
func TestLookupFailuresAreSaidOnceThenWhenTheyChange(t *testing.T) {
	logs := &bustest.Buffer{}
	log := zerolog.New(logs).Level(zerolog.InfoLevel)
	var f lookupFailures
	t0 := time.Now()
	timeout := fmt.Errorf("context deadline exceeded")
	for i := range 60 { // five minutes of failures 5 s apart, less one
		f.say(log, timeout, 5*time.Second, t0.Add(time.Duration(i)*5*time.Second))
	}
	f.say(log, fmt.Errorf("nats: connection closed"), 5*time.Second, t0.Add(300*time.Second))
	f.say(log, fmt.Errorf("nats: connection closed"), 5*time.Second, t0.Add(305*time.Second))
	f.say(log, fmt.Errorf("nats: connection closed"), 5*time.Second, t0.Add(610*time.Second))
	f.over(log)
	f.over(log) // nothing failed since: nothing to say

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []struct {
		level, msg, err string
		unsaid          float64
	}{
		{"warn", "cannot look up bucket", "context deadline exceeded", 0},
		{"warn", "cannot look up bucket", "nats: connection closed", 59},
		{"warn", "cannot look up bucket", "nats: connection closed", 1},
		{"info", "bucket looked up again", "", 0},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines said, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i, w := range want {
		l := lines[i]
		if l["level"] != w.level || l["message"] != w.msg || (w.err != "" && l["error"] != w.err) {
			t.Errorf("line %d: %v, want %s %q %q", i+1, l, w.level, w.msg, w.err)
		}
		if w.err != "" && l["failed_since_said"] != w.unsaid {
			t.Errorf("line %d: failed_since_said %v, want %v", i+1, l["failed_since_said"], w.unsaid)
		}
	}
	if lines[3]["failed"] != float64(63) {
		t.Errorf("the lookup working again says %v failures, want 63", lines[3]["failed"])
	}
}

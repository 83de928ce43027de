package vault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/novox/mesh-provisioner/inputs/backoff"
	"github.com/novox/mesh-provisioner/inputs/bus/bustest"
	"github.com/novox/mesh-provisioner/nodes/spec"
)

// Reask spreads the names over the spread (SPEC §4.2 r2: random jitter,
// so a mesh of clients reconnecting at once does not storm the vault):
// they are not asked all at once, and each within it.
func TestAskerReaskSpreadsTheNamesOverTheSpread(t *testing.T) {
	const n, spread = 40, time.Second
	script := map[string][]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("own/m-%d/s", i)
		names = append(names, name)
		script[name] = []string{StatusSealed}
	}
	a, v := startAsker(t, script, time.Hour)
	for _, name := range names {
		a.Ask(name, "")
	}
	for range names {
		nextAnswer(t, a)
	}
	at := time.Now()
	a.Reask(spread, func(string) bool { return true })
	var again []time.Duration
	for range names {
		an := nextAnswer(t, a)
		if an.Result.Outcome != Sealed {
			t.Fatalf("answer %+v", an)
		}
	}
	for _, name := range names {
		times := v.times(name)
		if len(times) != 2 {
			t.Fatalf("%s asked %d times, want twice", name, len(times))
		}
		again = append(again, times[1].Sub(at))
	}
	slices.Sort(again)
	if last := again[n-1]; last > spread+200*time.Millisecond {
		t.Errorf("the last name asked again %v after Reask, want within %v", last, spread)
	}
	if span := again[n-1] - again[0]; span < spread/2 {
		t.Errorf("%d names asked again within %v of each other, want them spread over %v", n, span, spread)
	}
}

// askedAgainSpan is how far apart the second asks of names came.
func askedAgainSpan(t *testing.T, v *scriptedVault, names []string) time.Duration {
	t.Helper()
	var again []time.Time
	for _, name := range names {
		times := v.times(name)
		if len(times) != 2 {
			t.Fatalf("%s asked %d times, want twice", name, len(times))
		}
		again = append(again, times[1])
	}
	slices.SortFunc(again, time.Time.Compare)
	return again[len(again)-1].Sub(again[0])
}

// Names the vault left silent while the bus was away are asked again over
// Reask's spread as the bus comes back: the reply to the first of them is
// not the vault back for the others, which asked them all at once (an
// outside audit: the whole waiting set of a node in a few milliseconds
// after its reconnect, the storm SPEC §4.2 r2's jitter is for).
func TestNamesLeftSilentAreAskedOverTheSpreadWhenTheBusComesBack(t *testing.T) {
	const n, spread = 20, time.Second
	script := map[string][]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("own/m-%d/s", i)
		names = append(names, name)
		script[name] = []string{StatusAbsent}
	}
	a, v := startAsker(t, script, time.Hour)
	a.backoff = backoff.Doubling{Min: time.Hour, Max: time.Hour}
	a.client.Timeout = 100 * time.Millisecond
	v.setSilent(true)
	for _, name := range names {
		a.Ask(name, "")
	}
	for range names {
		if an := nextAnswer(t, a); an.Result.Outcome != Silent {
			t.Fatalf("%s: %s with the vault silent", an.Name, an.Result)
		}
	}
	v.setSilent(false)
	a.Reask(spread, func(string) bool { return true })
	for range names {
		nextAnswer(t, a)
	}
	if span := askedAgainSpan(t, v, names); span < spread/2 {
		t.Errorf("%d names asked again within %v of each other, want them spread over %v", n, span, spread)
	}
}

// Refused names asked again for an assignment read again (the bus back)
// are asked over the spread given, not at once.
func TestRefusedNamesAskedAgainWithinASpreadAreSpread(t *testing.T) {
	const n, spread = 20, time.Second
	script := map[string][]string{}
	var names []string
	for i := range n {
		name := fmt.Sprintf("own/app/s-%d", i)
		names = append(names, name)
		script[name] = []string{StatusRefused}
	}
	a, v := startAsker(t, script, time.Hour)
	for _, name := range names {
		a.Ask(name, "")
		nextAnswer(t, a)
	}
	if got := a.AskRefusedOf("app", spread); got != n {
		t.Fatalf("AskRefusedOf asked %d names again, want %d", got, n)
	}
	for range names {
		nextAnswer(t, a)
	}
	if span := askedAgainSpan(t, v, names); span < spread/2 {
		t.Errorf("%d names asked again within %v of each other, want them spread over %v", n, span, spread)
	}
}

// An ask made while the bus is away is not sent: nats.go would keep it and
// send it as the bus comes back, long after its wait, with every other such
// ask of the node at the same instant.
func TestAnAskWhileTheBusIsAwayIsNotSentWhenItComesBack(t *testing.T) {
	s := bustest.Start(t)
	again := bustest.Same(s)
	vc := bustest.Connect(t, s, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	var asks atomic.Int32
	if _, err := vc.Subscribe(spec.VaultGetSubject("ace"), func(*nats.Msg) { asks.Add(1) }); err != nil {
		t.Fatal(err)
	}
	vc.Flush()
	nc := bustest.Connect(t, s, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	keys, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{NC: nc, Node: "ace", Keys: keys, Timeout: 200 * time.Millisecond}
	bustest.Stop(s)
	bustest.Eventually(t, 5*time.Second, func() error {
		if nc.IsConnected() {
			return fmt.Errorf("still connected")
		}
		return nil
	})
	r := c.Ask(context.Background(), "own/app/api-key", "app")
	if r.Outcome != Error || !strings.Contains(r.Reason, "not connected") {
		t.Fatalf("asked with the bus away: %s, want an error saying the bus is not connected", r)
	}
	bustest.Start(t, again)
	bustest.Eventually(t, 10*time.Second, func() error {
		if !nc.IsConnected() || !vc.IsConnected() {
			return fmt.Errorf("not back yet")
		}
		return nil
	})
	nc.Flush()
	vc.Flush()
	time.Sleep(100 * time.Millisecond)
	if n := asks.Load(); n != 0 {
		t.Fatalf("the vault got %d asks made while the bus was away", n)
	}
}

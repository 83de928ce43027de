package vault

import (
	"fmt"
	"slices"
	"testing"
	"time"
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
